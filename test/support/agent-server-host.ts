import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { AGENT_SERVER_HOST_ENTRY, copyAgentServerHost } from '../../services/builder/src/agent-server-host.js';
import { AgentServerHostInstall } from '../../services/builder/src/host-install.js';
import { commitProject, type AgentProject } from './agent-projects.js';
import { createTestDatabase, testQueuePrefix, type TestDatabase } from './database.js';
import { freePort } from './ports.js';
import { eventually } from './service-process.js';

/**
 * The agent server host as a build makes it, for tests that run the host without a builder:
 * copied into `<root>/.slipway-agent-server` (sources compiled) with its dependencies from the
 * builder's own install (AgentServerHostInstall), in the run's shared directory, so the run
 * installs them once between its files. Returns the host's directory.
 */
export async function builtAgentServerHost(root: string): Promise<string> {
  const hostDir = await copyAgentServerHost(root);
  const install = new AgentServerHostInstall({ root: inject('agentServerHostCache'), deadlineMs: 300_000 });
  await install.copyInto(hostDir, { signal: AbortSignal.timeout(300_000), onLine: () => undefined });
  return hostDir;
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
