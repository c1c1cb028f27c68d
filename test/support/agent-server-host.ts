import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import type { ArtifactManifest, GraphConfig } from '@slipway/domain';
import { authPath } from '../../services/builder/src/agent-project.js';
import {
  AGENT_SERVER_HOST_DIR,
  AGENT_SERVER_HOST_ENTRY,
  AGENT_SERVER_HOST_SOURCE,
  agentServerStart,
} from '../../services/builder/src/agent-server-host.js';
import { copyHostWithInstall } from '../../services/builder/src/host-install.js';
import { commitProject, writeProject, type AgentProject } from './agent-project-files.js';
import { createTestDatabase, testQueuePrefix, type TestDatabase } from './database.js';
import { freePort } from './ports.js';
import { eventually } from './service-process.js';

/**
 * The agent server host as a build makes it, for tests that run the host without a builder:
 * copied into `<root>/.slipway-agent-server` (sources compiled) with its dependencies from the
 * builder's own install (AgentServerHostInstall), in the run's shared directory, so the run
 * installs them once between its files: a copy, or hard links to the install's files when
 * `linked` (as a sandboxed build does; only for a host whose user never writes them). Returns
 * the host's directory.
 */
export function builtAgentServerHost(root: string, linked = false): Promise<string> {
  return copyHostWithInstall(root, inject('agentServerHostCache'), linked);
}

/**
 * `project` as its build would leave it, written without a builder at
 * `<dataDir>/artifacts/<revisionId>` in the builder's artifact layout (artifact.json and app/):
 * the project's files, the host compiled into app/.slipway-agent-server with the run's one
 * install of its dependencies (builtAgentServerHost), and the project's packages resolved from
 * that install — no `npm ci` of the project per deployment. Every dependency the project's
 * package.json names must be the very version the host locks (the fixture lockfile's are), or
 * it must be built from its repository. For tests of what a deployed agent server does, not of
 * how it is built; returns the artifact's directory.
 */
export async function writeAgentArtifact(dataDir: string, revisionId: string, project: AgentProject): Promise<string> {
  const artifact = path.join(dataDir, 'artifacts', revisionId);
  const app = path.join(artifact, 'app');
  mkdirSync(app, { recursive: true });
  writeProject(app, project);
  const wanted: Record<string, string> = JSON.parse(readFileSync(path.join(app, 'package.json'), 'utf8')).dependencies;
  const hostLock = JSON.parse(readFileSync(path.join(AGENT_SERVER_HOST_SOURCE, 'package-lock.json'), 'utf8'));
  for (const [name, version] of Object.entries(wanted ?? {})) {
    const locked = hostLock.packages[`node_modules/${name}`]?.version;
    if (locked !== version)
      throw new Error(`${project.name} wants ${name} ${version}, the host locks ${locked}: build it`);
  }
  const hostDir = await builtAgentServerHost(app, true);
  symlinkSync(path.join(AGENT_SERVER_HOST_DIR, 'node_modules'), path.join(app, 'node_modules'));
  // What the build reads from the graph config, read from the one written above.
  const config: GraphConfig = JSON.parse(readFileSync(path.join(app, 'langgraph.json'), 'utf8'));
  const manifest: ArtifactManifest = {
    version: 1,
    revision_id: revisionId,
    commit: null,
    source: { type: 'upload', object_path: `prebuilt/${project.name}` },
    graph_config_path: 'langgraph.json',
    graphs: config.graphs,
    env: config.env ?? null,
    node_version: config.node_version ?? null,
    start: agentServerStart(app, hostDir, 'langgraph.json', '.'),
    agent_server: { auth_path: authPath(config) },
    built_at: new Date().toISOString(),
  };
  writeFileSync(path.join(artifact, 'artifact.json'), JSON.stringify(manifest));
  return artifact;
}

/** A project served by the host on its own (see hostProject). */
export interface HostedProject {
  /** Where the host answers. */
  url: string;
  db: TestDatabase;
  /** Kills the host, drops its database and removes the project. */
  stop: () => Promise<void>;
}

/**
 * `project` served by the host on its own, no control plane: written under a new temporary
 * directory, resolving its packages from the host's install, with a fresh database and a Redis
 * prefix of its own, the host started as the process runtime starts it. Resolves once GET /ok
 * answers 200 (a plain probe, no credential), within `readyMs`.
 */
export async function hostProject(project: AgentProject, readyMs = 90_000): Promise<HostedProject> {
  const reposRoot = mkdtempSync(path.join(tmpdir(), `slipway-${project.name}-`));
  let db: TestDatabase | undefined;
  let server: ChildProcess | undefined;
  const stop = async () => {
    server?.kill('SIGKILL');
    await db?.drop();
    rmSync(reposRoot, { recursive: true, force: true });
  };
  try {
    const root = commitProject(reposRoot, project);
    const hostDir = await builtAgentServerHost(root);
    symlinkSync(path.join(hostDir, 'node_modules'), path.join(root, 'node_modules'));
    db = await createTestDatabase();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    server = spawn(process.execPath, [path.join(hostDir, AGENT_SERVER_HOST_ENTRY), 'langgraph.json'], {
      cwd: root,
      env: {
        PATH: process.env.PATH!,
        ...project.env,
        PORT: String(port),
        DATABASE_URI: db.url,
        REDIS_URI: 'redis://127.0.0.1:6379',
        REDIS_PREFIX: testQueuePrefix(project.name),
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const exited = new Promise<number>((resolve) => server!.once('exit', () => resolve(-1)));
    const status = () =>
      Promise.race([
        exited,
        fetch(`${url}/ok`).then(
          (r) => r.status,
          () => 0,
        ),
      ]);
    const ready = await eventually(status, (s) => s === 200 || s === -1, readyMs, 250);
    if (ready !== 200) throw new Error(`the host serving ${project.name} exited before GET /ok answered`);
    return { url, db, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
