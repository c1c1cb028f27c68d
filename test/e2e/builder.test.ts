import { execFileSync } from 'node:child_process';
import { randomInt, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { uploadFilePath, uploadObjectPath } from '@slipway/source';
import { craftTarball } from '../support/crafted-tarball.js';
import { createLocalIntegration, integrationRoot } from '../support/git-fixtures.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The real builder process against real git repositories (made here, under the local repos
 * root) holding a tiny Node app with no dependencies, so `npm install` works offline. No
 * deployer runs: a successful build stops at AWAITING_DEPLOY with its rollout job queued.
 */

const SECRET = 'hunter2-very-secret-value';
const BUILD_TIMEOUT_MS = 90_000;
// Each case builds (installs included, in the sandbox): it gets the build's bound and then some.
vi.setConfig({ testTimeout: BUILD_TIMEOUT_MS + 30_000 });

let api: TestApi;
let builder: ServiceProcess;
let tmp: string;
let reposRoot: string;
let integrationId: string;
let repoUrl: string;
const heads: Record<string, string> = {};

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', ...args], {
    cwd,
    encoding: 'utf8',
  }).trim();

const APP_FILES: Record<string, string> = {
  'package.json': JSON.stringify(
    {
      name: 'tiny-agent',
      version: '1.0.0',
      private: true,
      scripts: { build: 'node build.js', start: 'node dist/server.js' },
    },
    null,
    2,
  ),
  'build.js': [
    "const fs = require('fs');",
    "fs.mkdirSync('dist', { recursive: true });",
    "fs.writeFileSync('dist/server.js', \"require('http').createServer((q, s) => s.end('ok')).listen(process.env.PORT || 8000);\\n\");",
    "console.log('built dist/server.js');",
  ].join('\n'),
  'langgraph.json': JSON.stringify({
    node_version: '20',
    graphs: { agent: './dist/graph.js:graph' },
    dependencies: ['.'],
  }),
};

/** A node_version the graph config accepts that is not the running one. */
const OTHER_NODE_MAJOR = process.versions.node.startsWith('20.') ? '22' : '20';

function writeFiles(dir: string, files: Record<string, string>) {
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), content);
  }
}

/** The app repository: `main` builds; other branches each break one thing. */
function makeRepository(): string {
  const repo = path.join(reposRoot, 'tiny-agent');
  mkdirSync(repo, { recursive: true });
  git(repo, 'init', '-q', '-b', 'main');
  writeFiles(repo, APP_FILES);
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'tiny agent');
  heads.main = git(repo, 'rev-parse', 'HEAD');

  git(repo, 'checkout', '-q', '-b', 'no-config');
  git(repo, 'rm', '-q', 'langgraph.json');
  git(repo, 'commit', '-q', '-m', 'no graph config');
  heads.noConfig = git(repo, 'rev-parse', 'HEAD');
  git(repo, 'checkout', '-q', '-b', 'nothing-to-serve');
  writeFileSync(
    path.join(repo, 'package.json'),
    JSON.stringify({ name: 'tiny-agent', scripts: { build: 'node build.js' } }),
  );
  git(repo, 'commit', '-q', '-am', 'no graph config, no start script');

  git(repo, 'checkout', '-q', 'main');
  git(repo, 'checkout', '-q', '-b', 'bad-config');
  writeFileSync(
    path.join(repo, 'langgraph.json'),
    JSON.stringify({ graphs: { agent: 'no-export' }, node_version: '16' }),
  );
  git(repo, 'commit', '-q', '-am', 'bad graph config');

  git(repo, 'checkout', '-q', 'main');
  git(repo, 'checkout', '-q', '-b', 'no-start');
  writeFileSync(
    path.join(repo, 'package.json'),
    JSON.stringify({ name: 'tiny-agent', scripts: { build: 'node build.js' } }),
  );
  git(repo, 'commit', '-q', '-am', 'no start script');

  git(repo, 'checkout', '-q', 'main');
  git(repo, 'checkout', '-q', '-b', 'python');
  git(repo, 'rm', '-q', 'package.json', 'build.js');
  writeFileSync(
    path.join(repo, 'langgraph.json'),
    JSON.stringify({ graphs: { agent: './agent.py:graph' }, dependencies: ['.'] }),
  );
  writeFileSync(path.join(repo, 'agent.py'), 'graph = None\n');
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'a python graph');

  git(repo, 'checkout', '-q', 'main');
  git(repo, 'checkout', '-q', '-b', 'other-node');
  writeFileSync(
    path.join(repo, 'langgraph.json'),
    JSON.stringify({ node_version: OTHER_NODE_MAJOR, graphs: { agent: './dist/graph.js:graph' } }),
  );
  git(repo, 'commit', '-q', '-am', 'another node major');
  git(repo, 'checkout', '-q', 'main');
  for (const [branch, files] of Object.entries(BROKEN_GRAPH_PROJECTS)) graphProjectBranch(repo, branch, files);
  return `file://${repo}`;
}

/**
 * Graph projects (graphs in langgraph.json, no start script) each broken in one way, as a user's
 * project breaks: the build fails at its graph check (or at reading the config) with the graph,
 * its path and export, and the cause. None needs a dependency, so the install works offline.
 */
/** A project whose one graph, `agent`, is the export `graph` of `file`, holding `source`. */
const graphProject = (file: string, source: string) => ({
  'langgraph.json': JSON.stringify({ graphs: { agent: `./${file}:graph` } }),
  [file]: source,
});

const BROKEN_GRAPH_PROJECTS: Record<string, Record<string, string>> = {
  'graph-missing-export': graphProject(
    'src/agent.mjs',
    'export const grpah = { nodes: {} };\nexport const helper = 1;\n',
  ),
  'graph-syntax-error': graphProject('src/agent.ts', 'export const graph: unknown = {\n  nodes: [1, 2\n};\n'),
  'graph-not-a-graph': graphProject('src/agent.mjs', 'export const graph = { name: "agent", nodes: ["first"] };\n'),
  'graph-throws-at-import': graphProject(
    'src/agent.mjs',
    'if (!process.env.MODEL_ENDPOINT) throw new Error("MODEL_ENDPOINT is not set");\nexport const graph = null;\n',
  ),
  'graph-broken-import': graphProject(
    'src/agent.mjs',
    'import { StateGraph } from "@langchain/langgraph-not-installed";\nexport const graph = new StateGraph({});\n',
  ),
  'graph-config-not-json': {
    ...graphProject('src/agent.mjs', 'export const graph = null;\n'),
    'langgraph.json': '{"graphs": {"agent": "./src/agent.mjs:graph"},\n',
  },
};

function graphProjectBranch(repo: string, branch: string, files: Record<string, string>): void {
  git(repo, 'checkout', '-q', '-b', branch, 'main');
  git(repo, 'rm', '-q', 'build.js');
  writeFiles(repo, {
    'package.json': JSON.stringify({ name: 'graph-agent', private: true, type: 'module' }),
    ...files,
  });
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', branch);
  git(repo, 'checkout', '-q', 'main');
}

interface SourceDeploymentOptions {
  ref?: string;
  graphConfigPath?: string;
  installCommand?: string;
  buildCommand?: string;
  secrets?: Array<{ name: string; value: string }>;
}

/** A repohost deployment of the test repository, created over the API; returns its id and first revision's id. */
async function createSourceDeployment(
  name: string,
  options: SourceDeploymentOptions = {},
): Promise<{ deploymentId: string; revisionId: string }> {
  const res = await api.http.post('/v2/deployments', {
    name,
    source: 'repohost',
    source_config: {
      integration_id: integrationId,
      repo_url: repoUrl,
      ...(options.installCommand ? { install_command: options.installCommand } : {}),
      ...(options.buildCommand ? { build_command: options.buildCommand } : {}),
    },
    source_revision_config: {
      repo_ref: options.ref ?? 'main',
      ...(options.graphConfigPath ? { graph_config_path: options.graphConfigPath } : {}),
    },
    secrets: options.secrets ?? [],
  });
  expect(res.status, res.text).toBe(201);
  return { deploymentId: res.body.id, revisionId: res.body.latest_revision_id };
}

const revisionRow = async (id: string) =>
  (
    await api.dataSource.query(
      `SELECT status, status_message, attempt, artifact_ref, image_uri, source_revision_config FROM revisions WHERE id = $1`,
      [id],
    )
  )[0];

const settle = (id: string, statuses = ['AWAITING_DEPLOY', 'BUILD_FAILED', 'INTERRUPTED']) =>
  eventually(
    () => revisionRow(id),
    (r) => statuses.includes(r.status),
    BUILD_TIMEOUT_MS,
    200,
  );

const buildLogs = async (id: string): Promise<string[]> =>
  (
    await api.dataSource.query(
      `SELECT message FROM revision_logs WHERE revision_id = $1 AND type = 'build' ORDER BY id`,
      [id],
    )
  ).map((r: { message: string }) => r.message);

/** Alive and not a zombie (an orphan the init process has not reaped yet is gone for our purpose). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The host pids of processes whose command line is exactly `argv` (a sandboxed step's own pids are its namespace's). */
function hostPidsOf(argv: string[]): number[] {
  const wanted = argv.join('\0') + '\0';
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8') === wanted) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/**
 * Starts a build whose build command sleeps (as a child of the shell) and returns the sleep's
 * host pid once it runs, found by its unique duration.
 */
async function startSleepingBuild(name: string): Promise<{ deploymentId: string; revisionId: string; pid: number }> {
  const duration = `30.${randomInt(100_000, 999_999)}`;
  const ids = await createSourceDeployment(name, { buildCommand: `sleep ${duration} & echo "sleep-pid $!"; wait` });
  await eventually(
    () => buildLogs(ids.revisionId),
    (lines) => lines.some((l) => l.startsWith('sleep-pid ')),
    BUILD_TIMEOUT_MS,
    100,
  );
  const [pid] = await eventually(
    async () => hostPidsOf(['sleep', duration]),
    (pids) => pids.length === 1,
    10_000,
    100,
  );
  expect(alive(pid!)).toBe(true);
  return { ...ids, pid: pid! };
}

const buildDirOf = (revisionId: string, attempt = 0) =>
  path.join(api.config.dataDir, 'builds', `${revisionId}-a${attempt}`);

beforeAll(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), 'slipway-builder-e2e-'));
  api = await startTestApi();
  api.relay.start();
  // A `local` integration over a directory of the api's repos root, holding the app repository.
  reposRoot = integrationRoot(api, 'builder-repos');
  repoUrl = makeRepository();
  integrationId = (await createLocalIntegration(api, 'builder-repos', reposRoot)).id;
  // The reconciler (which any worker process runs) would also fail an overdue build; it runs
  // rarely here so that the deadline test sees the builder's own guard do it.
  builder = await startService('builder', serviceEnv(api, { SLIPWAY_RECONCILE_INTERVAL_MS: '3600000' }));
}, 60_000);

afterAll(async () => {
  await builder?.stop();
  await api?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('builder: repohost builds', () => {
  it('builds the branch into an artifact and hands the revision to the rollout queue', async () => {
    const { revisionId } = await createSourceDeployment('built-from-git');
    const row = await settle(revisionId);
    expect(row.status, row.status_message).toBe('AWAITING_DEPLOY');
    expect(row.source_revision_config.repo_commit_sha).toBe(heads.main);
    expect(row.attempt).toBe(0);

    const artifact = path.join(api.config.dataDir, 'artifacts', revisionId);
    expect(row.artifact_ref).toBe(artifact);
    expect(row.image_uri).toBe(`artifact://${revisionId}`);
    expect(readFileSync(path.join(artifact, 'app/dist/server.js'), 'utf8')).toMatch(/createServer/);
    expect(existsSync(path.join(artifact, 'app/package.json'))).toBe(true);
    expect(existsSync(path.join(artifact, 'app/.git'))).toBe(false);
    const manifest = JSON.parse(readFileSync(path.join(artifact, 'artifact.json'), 'utf8'));
    expect(manifest).toEqual({
      version: 1,
      revision_id: revisionId,
      commit: heads.main,
      source: { type: 'repohost', repo_url: repoUrl, ref: 'main' },
      graph_config_path: 'langgraph.json',
      graphs: { agent: './dist/graph.js:graph' },
      env: null,
      node_version: '20',
      start: { command: 'npm', args: ['run', 'start'], cwd: '.' },
      built_at: expect.any(String),
    });
    expect(existsSync(buildDirOf(revisionId))).toBe(false);

    const logs = await buildLogs(revisionId);
    expect(logs).toEqual(
      expect.arrayContaining(['$ npm install --no-audit --no-fund', '$ npm run build', 'built dist/server.js']),
    );

    // The rollout job: in the outbox and handed to Redis, with the attempt the row carries.
    const [outbox] = await api.dataSource.query(
      `SELECT job_id, payload FROM outbox WHERE job_name = 'rollout.revision' AND payload->>'revisionId' = $1`,
      [revisionId],
    );
    expect(outbox).toMatchObject({ job_id: `rollout-${revisionId}-a0`, payload: { revisionId, attempt: 0 } });
    const job = await eventually(
      () => api.queues.rollouts.getJob(`rollout-${revisionId}-a0`),
      (j) => !!j,
      10_000,
    );
    expect(job!.data).toMatchObject({ revisionId, attempt: 0 });
    const events = await api.dataSource.query(
      `SELECT from_status, to_status FROM revision_events WHERE revision_id = $1 ORDER BY id`,
      [revisionId],
    );
    expect(events.map((e: any) => `${e.from_status}>${e.to_status}`)).toEqual([
      'CREATING>AWAITING_BUILD',
      'AWAITING_BUILD>BUILDING',
      'BUILDING>AWAITING_DEPLOY',
    ]);
  });

  it('redacts the revision secrets from the build log and gives build commands a clean environment', async () => {
    const { revisionId } = await createSourceDeployment('secret-echo', {
      buildCommand:
        'echo "token is $MY_SECRET"; echo "key=${SLIPWAY_SECRETS_KEY:-unset} db=${DATABASE_URL:-unset} ci=$CI"; npm run build',
      secrets: [{ name: 'MY_SECRET', value: SECRET }],
    });
    const row = await settle(revisionId);
    expect(row.status, row.status_message).toBe('AWAITING_DEPLOY');
    const logs = await buildLogs(revisionId);
    expect(logs).toContain('token is ********');
    expect(logs).toContain('key=unset db=unset ci=true');
    expect(logs.some((l) => l.includes(SECRET))).toBe(false);
  });

  it('fails with the install command and its last log lines, redacted', async () => {
    const { revisionId } = await createSourceDeployment('failing-install', {
      installCommand: 'echo preparing; echo "exploded with $MY_SECRET" >&2; exit 3',
      secrets: [{ name: 'MY_SECRET', value: SECRET }],
    });
    const row = await settle(revisionId);
    expect(row.status).toBe('BUILD_FAILED');
    expect(row.status_message).toContain(
      'The install command `echo preparing; echo "exploded with $MY_SECRET" >&2; exit 3` exited with code 3.',
    );
    expect(row.status_message).toMatch(/Last log lines:\n(.*\n)*preparing\nexploded with \*{8}$/);
    expect(row.status_message).not.toContain(SECRET);
    expect(row.artifact_ref).toBeNull();
    expect(existsSync(path.join(api.config.dataDir, 'artifacts', revisionId))).toBe(false);
    expect(existsSync(buildDirOf(revisionId))).toBe(false);
    const logs = await buildLogs(revisionId);
    expect(logs.at(-1)).toMatch(/^Build failed: The install command/);
  });

  it('builds a plain app with a start script and no graph config file', async () => {
    const { revisionId } = await createSourceDeployment('plain-app', { ref: 'no-config' });
    const row = await settle(revisionId);
    expect(row.status, row.status_message).toBe('AWAITING_DEPLOY');
    const manifest = JSON.parse(
      readFileSync(path.join(api.config.dataDir, 'artifacts', revisionId, 'artifact.json'), 'utf8'),
    );
    expect(manifest).toMatchObject({
      graph_config_path: null,
      graphs: {},
      start: { command: 'npm', args: ['run', 'start'], cwd: '.' },
    });
    expect(manifest.agent_server).toBeUndefined();
    expect(await buildLogs(revisionId)).toContain(
      `No graph config file (langgraph.json) at ${repoUrl} 'no-config' (commit ${heads.noConfig!.slice(0, 12)}): a plain app.`,
    );
  });

  it('fails a project with neither a graph config file nor a start script, saying what to add', async () => {
    const { revisionId } = await createSourceDeployment('nothing-to-serve', { ref: 'nothing-to-serve' });
    const row = await settle(revisionId);
    expect(row.status).toBe('BUILD_FAILED');
    expect(row.status_message).toMatch(
      new RegExp(
        String.raw`^Nothing to serve in the source root: there is no graph config file \(langgraph\.json\) and ` +
          String.raw`package\.json has no "start" script\. Add a "start" script`,
      ),
    );
    expect(row.status_message).toContain('{"graphs": {"agent": "./src/agent.ts:graph"}}');
    // The commit was resolved before the project was read, so it is recorded all the same.
    expect(row.source_revision_config.repo_commit_sha).toMatch(/^[0-9a-f]{40}$/);
  });

  it('fails when a graph config file it was told to use is missing, saying where it looked', async () => {
    const { revisionId } = await createSourceDeployment('named-graph-config', {
      ref: 'no-config',
      graphConfigPath: 'agents/langgraph.json',
    });
    const row = await settle(revisionId);
    expect(row.status).toBe('BUILD_FAILED');
    expect(row.status_message).toMatch(
      new RegExp(
        `^Graph config file 'agents/langgraph\\.json' not found at ${repoUrl} 'no-config' \\(commit [0-9a-f]{12}\\)\\.`,
      ),
    );
  });

  it('fails with every problem of an invalid graph config', async () => {
    const { revisionId } = await createSourceDeployment('bad-graph-config', { ref: 'bad-config' });
    const row = await settle(revisionId);
    expect(row.status).toBe('BUILD_FAILED');
    expect(row.status_message).toMatch(
      /^Graph config file 'langgraph\.json' is invalid: "graphs\.agent" must be an import string .*; "node_version" must be one of/,
    );
  });

  it('serves a project without a start script as an agent server, and fails when its graph file is missing', async () => {
    const { revisionId } = await createSourceDeployment('no-start-script', { ref: 'no-start' });
    const row = await settle(revisionId);
    expect(row.status).toBe('BUILD_FAILED');
    expect(row.status_message).toMatch(
      /^Graph 'agent' \(\.\/dist\/graph\.js:graph\) cannot be served: the file \.\/dist\/graph\.js does not exist/,
    );
    expect(await buildLogs(revisionId)).toContain(
      'No "start" script: the graphs are served by the LangGraph.js agent server.',
    );
  });

  it('refuses a Python graph project saying Python agent servers are not available', async () => {
    const { revisionId } = await createSourceDeployment('python-graph', { ref: 'python' });
    const row = await settle(revisionId);
    expect(row.status).toBe('BUILD_FAILED');
    expect(row.status_message).toMatch(
      /^Graph 'agent' \(\.\/agent\.py:graph\) is a Python graph, and Python agent servers are not available in this installation/,
    );
  });

  describe('a graph project that is broken ends BUILD_FAILED naming the graph and the cause', () => {
    const failureOf = async (branch: string) => {
      const { revisionId } = await createSourceDeployment(branch, { ref: branch });
      const row = await settle(revisionId);
      expect(row.status, row.status_message).toBe('BUILD_FAILED');
      expect(row.artifact_ref).toBeNull();
      // The message's first line says what failed; the last build log lines follow it.
      return { message: (row.status_message as string).split('\n')[0]!, logs: await buildLogs(revisionId) };
    };

    it('a missing export: names the export and lists those the module has', async () => {
      const { message, logs } = await failureOf('graph-missing-export');
      expect(message).toBe(
        `Graph 'agent' (./src/agent.mjs:graph) cannot be served: ./src/agent.mjs has no export named "graph" (its exports: grpah, helper).`,
      );
      expect(logs).toContain('Checking graphs agent');
    });

    it('a syntax error in a TypeScript graph file: the compiler says where', async () => {
      const { message } = await failureOf('graph-syntax-error');
      expect(message).toMatch(
        new RegExp(
          String.raw`^Graph 'agent' \(\.\/src\/agent\.ts:graph\) cannot be served: importing \.\/src\/agent\.ts ` +
            String.raw`failed: it does not compile: src\/agent\.ts:3:0: Expected "\]" but found "\}"\.$`,
        ),
      );
    });

    it('an export that is not a graph: says what it is', async () => {
      const { message } = await failureOf('graph-not-a-graph');
      expect(message).toBe(
        `Graph 'agent' (./src/agent.mjs:graph) cannot be served: the export "graph" of ./src/agent.mjs is not a ` +
          `graph (a StateGraph, compiled or not): it is an object (Object).`,
      );
    });

    it('a module that throws at import: its error', async () => {
      const { message } = await failureOf('graph-throws-at-import');
      expect(message).toBe(
        `Graph 'agent' (./src/agent.mjs:graph) cannot be served: importing ./src/agent.mjs failed: MODEL_ENDPOINT is not set.`,
      );
    });

    it('an import of a package that is not installed: names the package', async () => {
      const { message } = await failureOf('graph-broken-import');
      expect(message).toMatch(
        new RegExp(
          String.raw`^Graph 'agent' \(\.\/src\/agent\.mjs:graph\) cannot be served: importing \.\/src\/agent\.mjs ` +
            String.raw`failed: Cannot find package '@langchain\/langgraph-not-installed'`,
        ),
      );
    });

    it('a langgraph.json that is not JSON: says so before anything is installed', async () => {
      const { message, logs } = await failureOf('graph-config-not-json');
      expect(message).toMatch(/^Graph config file 'langgraph\.json' is not valid JSON \(/);
      expect(logs.some((l) => /install/i.test(l))).toBe(false);
    });
  });

  it('fails clearly when node_version asks for another Node.js major', async () => {
    const { revisionId } = await createSourceDeployment('other-node', { ref: 'other-node' });
    const row = await settle(revisionId);
    expect(row.status).toBe('BUILD_FAILED');
    expect(row.status_message).toMatch(
      new RegExp(
        `^The graph config asks for node_version "${OTHER_NODE_MAJOR}", but this installation runs Node\\.js `,
      ),
    );
  });

  it('fails at fetch when the branch does not exist', async () => {
    const { revisionId } = await createSourceDeployment('missing-branch', { ref: 'no-such-branch' });
    const row = await settle(revisionId);
    expect(row.status).toBe('BUILD_FAILED');
    expect(row.status_message).toMatch(new RegExp(`^Branch or tag 'no-such-branch' not found in ${repoUrl}\\.`));
  });
});

describe('builder: stopping a running build', () => {
  it('kills the whole process group when the revision is interrupted', async () => {
    const { deploymentId, revisionId, pid } = await startSleepingBuild('interrupted-build');
    const res = await api.http.post(`/v2/deployments/${deploymentId}/revisions/${revisionId}/interruption`);
    expect(res.status, res.text).toBe(200);
    await eventually(
      async () => alive(pid),
      (up) => !up,
      15_000,
      100,
    );
    const row = await revisionRow(revisionId);
    expect(row.status).toBe('INTERRUPTED');
    expect(row.status_message).toBe('Interrupted by request.');
    await eventually(
      async () => existsSync(buildDirOf(revisionId)),
      (present) => !present,
      10_000,
    );
    expect(existsSync(path.join(api.config.dataDir, 'artifacts', revisionId))).toBe(false);
    await eventually(
      () => buildLogs(revisionId),
      (lines) => lines.some((l) => l.startsWith('Build stopped:')),
      10_000,
    );
  });

  it('fails the build past its deadline and kills the process group', async () => {
    const { revisionId, pid } = await startSleepingBuild('overdue-build');
    await api.dataSource.query(`UPDATE revisions SET deadline_at = now() - interval '1 second' WHERE id = $1`, [
      revisionId,
    ]);
    await eventually(
      async () => alive(pid),
      (up) => !up,
      15_000,
      100,
    );
    const row = await settle(revisionId, ['BUILD_FAILED']);
    expect(row.status_message).toMatch(
      /^The build exceeded its deadline of 30 min\.\nLast log lines:\n(.*\n)*sleep-pid \d+$/,
    );
    await eventually(
      async () => existsSync(buildDirOf(revisionId)),
      (present) => !present,
      10_000,
    );
  });
});

describe('builder: uploaded tarballs', () => {
  /** An upload deployment without a revision (docs/api.md, Uploads and the deploy CLIs), then a PATCH naming its tarball. */
  async function uploadRevision(name: string, store: (objectPath: string, deploymentId: string) => Promise<void>) {
    const created = await api.http.post('/v2/deployments', {
      name,
      source: 'internal_source',
      source_config: {},
      source_revision_config: {},
    });
    expect(created.status, created.text).toBe(201);
    const deploymentId = created.body.id;
    const objectPath = uploadObjectPath(deploymentId);
    await store(objectPath, deploymentId);
    const patched = await api.http.patch(`/v2/deployments/${deploymentId}`, {
      revision_source: 'internal_source',
      source_revision_config: { source_tarball_path: objectPath, langgraph_config_path: 'langgraph.json' },
    });
    expect(patched.status, patched.text).toBe(200);
    return { deploymentId, revisionId: patched.body.latest_revision_id as string, objectPath };
  }

  const recordUpload = (objectPath: string, deploymentId: string) =>
    api.dataSource.query(`INSERT INTO uploads (object_path, deployment_id, completed_at) VALUES ($1, $2, now())`, [
      objectPath,
      deploymentId,
    ]);

  it('builds the uploaded source (single top-level directory) into an artifact', async () => {
    const { revisionId, objectPath } = await uploadRevision('built-from-upload', async (objectPath, deploymentId) => {
      const src = path.join(tmp, `upload-${randomUUID()}`, 'tiny-agent');
      writeFiles(src, APP_FILES);
      const file = uploadFilePath(api.config.dataDir, objectPath);
      mkdirSync(path.dirname(file), { recursive: true });
      execFileSync('tar', ['-czf', file, '-C', path.dirname(src), 'tiny-agent']);
      await recordUpload(objectPath, deploymentId);
    });
    const row = await settle(revisionId);
    expect(row.status, row.status_message).toBe('AWAITING_DEPLOY');
    const artifact = path.join(api.config.dataDir, 'artifacts', revisionId);
    expect(existsSync(path.join(artifact, 'app/dist/server.js'))).toBe(true);
    const manifest = JSON.parse(readFileSync(path.join(artifact, 'artifact.json'), 'utf8'));
    expect(manifest).toMatchObject({
      commit: null,
      source: { type: 'upload', object_path: objectPath },
      start: { cwd: '.' },
    });
    expect(row.source_revision_config.repo_commit_sha ?? null).toBeNull();
  });

  it(
    'refuses a crafted archive whose symlinks escape by real path (up -> ., esc -> up/..): BUILD_FAILED, ' +
      'nothing written outside',
    async () => {
      let box = '';
      const { revisionId } = await uploadRevision('upload-escape', async (objectPath, deploymentId) => {
        const file = uploadFilePath(api.config.dataDir, objectPath);
        mkdirSync(path.dirname(file), { recursive: true });
        box = path.dirname(file);
        writeFileSync(
          file,
          craftTarball([
            { path: 'agent/langgraph.json', body: '{"graphs": {"agent": "./agent.js:graph"}}' },
            { path: 'agent/up', type: 'SymbolicLink', linkpath: '.' },
            { path: 'agent/esc', type: 'SymbolicLink', linkpath: 'up/../..' },
          ]),
        );
        await recordUpload(objectPath, deploymentId);
      });
      const row = await settle(revisionId);
      expect(row.status).toBe('BUILD_FAILED');
      expect(row.status_message).toContain(
        "The source tarball was refused: symlink 'agent/esc' points outside the archive (up/../..)",
      );
      expect(readdirSync(box).every((name) => name.endsWith('.tar.gz'))).toBe(true);
    },
  );

  it('fails clearly when the uploaded file is gone', async () => {
    const { revisionId, objectPath } = await uploadRevision('upload-missing', recordUpload);
    const row = await settle(revisionId);
    expect(row.status).toBe('BUILD_FAILED');
    expect(
      row.status_message.startsWith(
        `The source tarball '${objectPath}' is missing on the server; upload the source again (POST /v2/deployments/{id}/upload-url).`,
      ),
    ).toBe(true);
  });
});
