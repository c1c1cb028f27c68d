import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createDatabaseIfMissing, dropDatabaseIfExists } from '@slipway/db';
import { AGENT_SERVER_HOST_ENTRY, copyAgentServerHost } from '../../services/builder/src/agent-server-host.js';
import { killGroup } from '../../test/support/app-processes.js';
import { freePort } from '../support/processes.js';
import type { BenchPipeline } from '../support/pipeline.js';
import { atMost, type BenchRow } from '../support/report.js';
import { ROOT, type BenchStack } from '../support/stack.js';

/** The LangGraph.js project deployed (a two-node graph, @langchain/langgraph and core, locked). */
export const AGENT_FIXTURE = path.join(ROOT, 'bench/fixtures/langgraph-agent');
const SERVER = process.env.DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';
const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0';

/** A deployment left running for the serving scenario to measure (the agent, or the plain app). */
export interface DeployedApp {
  deploymentId: string;
  /** Its `url`: the edge, `https://<name>.bench.test:<port>` (bench/support/stack.ts). */
  url: string;
  /** Its serving URL: the deployer's proxy on the deployment's serving port, read from the database. */
  servingUrl: string;
  /** Its instance's own address. */
  instanceUrl: string;
}

/** The fixture with `langgraph.json` naming the Node major running the bench (the builder checks it). */
function projectFiles(change = ''): Record<string, string> {
  const config = JSON.parse(readFileSync(path.join(AGENT_FIXTURE, 'langgraph.json'), 'utf8'));
  const agent = readFileSync(path.join(AGENT_FIXTURE, 'src/agent.ts'), 'utf8');
  return {
    'langgraph.json': JSON.stringify({ ...config, node_version: process.versions.node.split('.')[0] }),
    'src/agent.ts': agent + change,
  };
}

const sh = (cmd: string, args: string[], cwd: string, env: Record<string, string>) =>
  execFileSync(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: 'ignore' });

/**
 * The same project done by hand, as one would on a server: `npm ci`, the agent server's own
 * install (the host the platform serves graphs with, and its install command), then start it
 * until `/ok` answers. Both installs start from an empty npm cache, as a deployment's first
 * build does; its database is a scratch one of this run.
 */
async function byHand(stack: BenchStack): Promise<number> {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-byhand-'));
  const dbName = `${stack.dbName}_byhand`;
  const npmEnv = { npm_config_cache: path.join(dir, '.npm'), npm_config_update_notifier: 'false' };
  let child: ReturnType<typeof spawn> | null = null;
  try {
    cpSync(AGENT_FIXTURE, path.join(dir, 'app'), { recursive: true });
    const app = path.join(dir, 'app');
    for (const [file, text] of Object.entries(projectFiles())) writeFileSync(path.join(app, file), text);
    await createDatabaseIfMissing(SERVER, dbName);
    const started = performance.now();
    sh('npm', ['ci', '--no-audit', '--no-fund'], app, npmEnv);
    const host = await copyAgentServerHost(app);
    sh('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts'], host, npmEnv);
    const port = await freePort();
    const db = new URL(SERVER);
    db.pathname = `/${dbName}`;
    child = spawn(process.execPath, [path.join(host, AGENT_SERVER_HOST_ENTRY), 'langgraph.json'], {
      cwd: app,
      detached: true,
      stdio: 'ignore',
      env: {
        PATH: process.env.PATH ?? '',
        HOME: dir,
        PORT: String(port),
        DATABASE_URI: db.toString(),
        REDIS_URI: REDIS,
        REDIS_PREFIX: `${stack.prefix}:byhand`,
      },
    });
    for (const deadline = performance.now() + 300_000; ; ) {
      const res = await fetch(`http://127.0.0.1:${port}/ok`).catch(() => null);
      if (res?.ok) break;
      if (child.exitCode !== null) throw new Error(`the agent server started by hand exited with ${child.exitCode}`);
      if (performance.now() > deadline) throw new Error('the agent server started by hand did not answer /ok');
      await new Promise((r) => setTimeout(r, 100));
    }
    return performance.now() - started;
  } finally {
    if (child?.pid) killGroup(child.pid);
    await dropDatabaseIfExists(SERVER, dbName).catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Seconds a revision spent building (BUILDING → AWAITING_DEPLOY) and rolling out (→ DEPLOYED), from its history. */
async function phases(stack: BenchStack, revisionId: string): Promise<{ build: number; rollout: number }> {
  const events: Array<{ to_status: string; at: Date }> = await stack.dataSource.query(
    `SELECT to_status, created_at AS at FROM revision_events WHERE revision_id = $1 ORDER BY id`,
    [revisionId],
  );
  const at = (status: string) => events.find((e) => e.to_status === status)?.at.getTime() ?? Number.NaN;
  return {
    build: (at('AWAITING_DEPLOY') - at('BUILDING')) / 1000,
    rollout: (at('DEPLOYED') - at('AWAITING_DEPLOY')) / 1000,
  };
}

/**
 * Deploy latency, the time from the request to DEPLOYED through the real api, builder and
 * deployer: a LangGraph.js project's first deploy against the same project done by hand
 * (byHand) in the same run, then a code-only redeploy (one file changed, the same lockfile),
 * which reuses the first build's installed dependencies, against that first deploy; in a full
 * run also a second deployment's first deploy, which reuses the builder's install of the agent
 * server, against the first.
 */
export async function deployScenario(
  stack: BenchStack,
  pipeline: BenchPipeline,
  measure = true,
  handBaseline = true,
): Promise<{ rows: BenchRow[]; agent: DeployedApp }> {
  // Without `measure` (only the serving scenario wants the agent), or in the smoke run, the
  // by-hand baseline's installs are skipped: the first deploy's row then has no baseline.
  const hand = measure && handBaseline ? await byHand(stack) : undefined;
  const name = `bench-agent-${stack.id}`;
  pipeline.commit(name, { ...projectFiles(), '.gitignore': 'node_modules\n' }, AGENT_FIXTURE);
  let t = performance.now();
  const { deploymentId, revisionId } = await pipeline.deploy(name);
  await pipeline.deployed(deploymentId, revisionId);
  const first = performance.now() - t;

  pipeline.commit(name, projectFiles(`\n// redeployed ${new Date().toISOString()}\n`));
  t = performance.now();
  const second = await pipeline.redeploy(deploymentId);
  await pipeline.deployed(deploymentId, second);
  const again = performance.now() - t;
  const [p1, p2] = [await phases(stack, revisionId), await phases(stack, second)];

  // Another deployment's first deploy: its own project install, but the agent server's
  // dependencies are the builder's one install, copied (only in a full run: one more build).
  let other: number | undefined;
  if (measure && handBaseline) {
    const otherName = `${name}-other`;
    pipeline.commit(otherName, { ...projectFiles(), '.gitignore': 'node_modules\n' }, AGENT_FIXTURE);
    t = performance.now();
    const created = await pipeline.deploy(otherName);
    await pipeline.deployed(created.deploymentId, created.revisionId);
    other = performance.now() - t;
  }

  const s = (ms: number) => ms / 1000;
  const rows: BenchRow[] = [
    hand === undefined
      ? {
          scenario: 'deploy latency',
          metric: 'first deploy (no by-hand baseline in this run)',
          value: s(first),
          unit: 's',
        }
      : {
          ...atMost('deploy latency', 'first deploy vs npm ci + start by hand', s(first), s(hand), Infinity, 's'),
          target: undefined,
          met: undefined,
        },
    atMost('deploy latency', 'code-only redeploy vs first deploy', s(again), s(first), 0.3, 's'),
    ...(other === undefined
      ? []
      : [
          {
            ...atMost(
              'deploy latency',
              "another deployment's first deploy vs the first (agent server installed)",
              s(other),
              s(first),
              Infinity,
              's',
            ),
            target: undefined,
            met: undefined,
          },
        ]),
    {
      scenario: 'deploy latency',
      metric: 'first deploy: build, rollout',
      value: p1.build,
      unit: `s, ${p1.rollout.toFixed(1)} s`,
    },
    {
      scenario: 'deploy latency',
      metric: 'redeploy: build, rollout',
      value: p2.build,
      unit: `s, ${p2.rollout.toFixed(1)} s`,
    },
  ];
  return { rows: measure ? rows : [], agent: await running(stack, pipeline, deploymentId) };
}

/** Where a deployed deployment answers: its `url` at the edge, its serving URL and its instance. */
async function running(stack: BenchStack, pipeline: BenchPipeline, deploymentId: string): Promise<DeployedApp> {
  return {
    deploymentId,
    url: (await stack.request('GET', `/v2/deployments/${deploymentId}`)).url as string,
    servingUrl: await pipeline.servingUrl(deploymentId),
    instanceUrl: await pipeline.instanceUrl(deploymentId),
  };
}

/**
 * The smallest plain app (no agent server, so no key check at its serving URL): a Node server
 * answering every request with two bytes from memory, fast enough (tens of thousands of
 * requests a second) that whatever proxy stands in front of it is the bound, not the app.
 */
const PLAIN_SERVER = `require('node:http')
  .createServer((req, res) => res.end('ok'))
  .listen(Number(process.env.PORT), '127.0.0.1');
`;

/** Deploys PLAIN_SERVER through the real api, builder and deployer; returns where it answers. */
export async function deployPlainApp(stack: BenchStack, pipeline: BenchPipeline): Promise<DeployedApp> {
  const name = `bench-plain-${stack.id}`;
  pipeline.commit(name, {
    'package.json': JSON.stringify({ name, version: '1.0.0', private: true, scripts: { start: 'node server.js' } }),
    'server.js': PLAIN_SERVER,
  });
  const { deploymentId, revisionId } = await pipeline.deploy(name);
  await pipeline.deployed(deploymentId, revisionId);
  return running(stack, pipeline, deploymentId);
}
