/**
 * `pnpm bench`: Slipway's hot paths, each measured as a ratio against a baseline run in the same
 * run on the same machine (absolute numbers on shared 2-core machines are noise; ratios are not).
 * See bench/README.md for what each line means and the targets.
 *
 *   pnpm bench                       every scenario (several minutes)
 *   pnpm bench --quick               a smoke run (seconds; what CI runs)
 *   pnpm bench --only create,list    some scenarios
 *   pnpm bench --out file.json       where the JSON goes (default bench/results/latest.json)
 *   pnpm bench --profile dir         also write the api's, the edge's and the deployer's CPU profiles (.cpuprofile) into dir
 *   pnpm bench --burst 2000          creates in the burst scenario (default 10000)
 *   pnpm bench --only agent          the agent server (runs.wait, serving proxy, reads at 20k)
 *   pnpm bench --only tracing        trace ingest (/api/v1/runs/multipart) and trace lists at 1M runs
 *   pnpm bench --duration 10         seconds per load measurement (e.g. with --quick: quick sizes, full loads)
 *   pnpm bench --build start         the services as `npm start` runs them (default: package, the image's layout)
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { TcpProxy } from '../test/support/tcp-proxy.js';
import { agentServerScenario } from './scenarios/agent-server.js';
import { burstScenario } from './scenarios/burst.js';
import { createScenario } from './scenarios/create.js';
import { deployPlainApp, deployScenario } from './scenarios/deploy.js';
import { handoffScenario } from './scenarios/handoff.js';
import { idleScenario } from './scenarios/idle.js';
import { listScenario } from './scenarios/list.js';
import { FULL, QUICK } from './scenarios/options.js';
import { readsScenario } from './scenarios/reads.js';
import { plainServingScenario, servingScenario } from './scenarios/serving.js';
import { tracingIngestScenario, tracingListScenario } from './scenarios/tracing.js';
import { BenchPipeline } from './support/pipeline.js';
import { printTable, type BenchRow } from './support/report.js';
import { BenchStack, BUILD_MODES, ROOT, type BuildMode } from './support/stack.js';

const SCENARIOS = [
  'idle',
  'deploy',
  'serving',
  'create',
  'reads',
  'handoff',
  'burst',
  'list',
  'agent',
  'tracing',
] as const;
type Scenario = (typeof SCENARIOS)[number];

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    out: { type: 'string', default: path.join(ROOT, 'bench/results/latest.json') },
    profile: { type: 'string' },
    burst: { type: 'string' },
    build: { type: 'string', default: 'package' },
    duration: { type: 'string' },
  },
});
const build = values.build as BuildMode;
if (!BUILD_MODES.includes(build)) throw new Error(`unknown --build ${values.build}; one of ${BUILD_MODES.join(', ')}`);
const options = {
  ...(values.quick ? QUICK : FULL),
  ...(values.burst ? { burst: Number(values.burst) } : {}),
  ...(values.duration ? { durationSec: Number(values.duration) } : {}),
};
const only = (values.only?.split(',') ?? SCENARIOS) as Scenario[];
/** Every scenario but the list (its own databases) runs against the stack. */
function needsStackFor(scenarios: Scenario[]): boolean {
  return scenarios.some((s) => s !== 'list');
}
for (const s of only)
  if (!SCENARIOS.includes(s)) throw new Error(`unknown scenario ${s}; one of ${SCENARIOS.join(', ')}`);
// Checked before anything is started or created: a missing tool found half-way would leave the run's database behind.
if (only.includes('serving') && spawnSync('nginx', ['-v'], { stdio: 'ignore' }).error) {
  throw new Error(
    "the serving scenario puts Debian's nginx in front of an instance, and nginx is not on PATH: apt-get " +
      'install nginx, or leave it out (--only …)',
  );
}
if (only.includes('serving') && spawnSync('caddy', ['version'], { stdio: 'ignore' }).error) {
  throw new Error(
    "the serving scenario compares the edge's HTTPS with Debian's caddy terminating TLS, and caddy is not on " +
      'PATH: apt-get install caddy, or leave it out (--only …)',
  );
}
// The stack's edge serves a self-signed certificate made with openssl (bench/support/stack.ts).
if (needsStackFor(only) && spawnSync('openssl', ['version'], { stdio: 'ignore' }).error) {
  throw new Error(
    'the bench stack makes its edge a certificate with openssl, which is not on PATH: apt-get install openssl',
  );
}

const rows: BenchRow[] = [];
const started = new Date();
/** Runs one step of the bench and says on stderr how long it took, so a long run shows its progress. */
async function step<T>(name: string, work: () => Promise<T>): Promise<T> {
  const at = performance.now();
  process.stderr.write(`bench: ${name}…\n`);
  try {
    return await work();
  } finally {
    process.stderr.write(`bench: ${name} took ${((performance.now() - at) / 1000).toFixed(1)} s\n`);
  }
}
const needsStack = needsStackFor(only);
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0';
// The api reaches Redis through a proxy the burst scenario can cut.
const proxy = needsStack ? await TcpProxy.start(redisUrl, 6379) : null;
const stack = needsStack ? new BenchStack(build) : null;
/** A step that threw: what was measured before it is still printed and written. */
let failure: unknown = null;
try {
  if (stack && proxy) {
    const profile = values.profile ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(values.profile)}`] : [];
    await step('stack start', () => stack.start({ REDIS_URL: proxy.urlFor(redisUrl) }, profile));
    if (only.includes('idle')) rows.push(...(await step('idle', () => idleScenario(stack, options))));
    // Before anything else queues rollouts: the real deployer would take them (serving needs a deployed agent).
    if (only.includes('deploy') || only.includes('serving')) {
      const pipeline = new BenchPipeline(stack);
      try {
        await pipeline.start(profile);
        const deployed = await step('deploy', () =>
          deployScenario(stack, pipeline, only.includes('deploy'), options.byHand),
        );
        rows.push(...deployed.rows);
        if (only.includes('serving')) {
          rows.push(...(await step('serving', () => servingScenario(stack, deployed.agent, options))));
          const plain = await step('deploy a plain app', () => deployPlainApp(stack, pipeline));
          rows.push(...(await step('serving a plain app', () => plainServingScenario(stack, plain, options))));
        }
      } finally {
        await pipeline.close();
      }
    }
    if (only.includes('create') || only.includes('handoff') || only.includes('reads')) {
      // As users run it: the real builder and deployer take every create's jobs meanwhile. First,
      // while no backlog waits: the stand-in round's jobs are never consumed, and would load the
      // real workers (and so the raw baseline) if they came after.
      const pipeline = new BenchPipeline(stack);
      try {
        await pipeline.start();
        if (only.includes('create'))
          rows.push(...(await step('create, real workers', () => createScenario(stack, options, 'real'))));
        if (only.includes('handoff'))
          rows.push(...(await step('handoff, real deployer', () => handoffScenario(stack, options, 'real'))));
        // The reads with the workers up and idle beside the api, as `npm start` runs them.
        if (only.includes('reads')) rows.push(...(await step('reads', () => readsScenario(stack, options))));
      } finally {
        await pipeline.close();
      }
      if (only.includes('create')) rows.push(...(await step('create', () => createScenario(stack, options))));
    }
    if (only.includes('tracing'))
      rows.push(...(await step('trace ingest', () => tracingIngestScenario(stack, options))));
    await stack.startWorker();
    // The stand-in rows isolate the api and the relay: a worker that only records what reached it.
    if (only.includes('handoff')) rows.push(...(await step('handoff', () => handoffScenario(stack, options))));
    if (only.includes('burst')) rows.push(...(await step('burst', () => burstScenario(stack, options, proxy))));
    // Last of the stack's: the deployment it creates has a rollout job of its own, which must not
    // reach the worker while handoff and burst count theirs.
    if (only.includes('agent')) rows.push(...(await step('agent', () => agentServerScenario(stack, options))));
  }
  if (only.includes('list')) rows.push(...(await step('list', () => listScenario(options))));
  // Its own database, after the stack's scenarios: filling a million runs competes with nothing measured.
  if (only.includes('tracing')) rows.push(...(await step('trace list', () => tracingListScenario(options))));
} catch (err) {
  failure = err;
} finally {
  await stack?.close();
  await proxy?.close();
}

console.log(
  `services: ${build === 'start' ? 'as `npm start` runs them (dist/start.js)' : 'the packaged build (dist/main.js)'}`,
);
printTable(rows);
mkdirSync(path.dirname(values.out!), { recursive: true });
writeFileSync(
  values.out!,
  `${JSON.stringify(
    {
      started: started.toISOString(),
      quick: values.quick,
      build,
      machine: { cpus: os.cpus().length, node: process.version },
      options,
      rows,
      ...(failure ? { failed: String((failure as Error).stack ?? failure) } : {}),
    },
    null,
    2,
  )}\n`,
);
console.log(`\nwritten to ${path.relative(process.cwd(), values.out!)}`);
if (failure) {
  console.error('bench: a step failed; the rows above are what was measured before it');
  throw failure;
}
const missed = rows.filter((r) => r.met === false);
if (missed.length)
  console.log(`${missed.length} target(s) not met: ${missed.map((r) => `${r.scenario} ${r.metric}`).join('; ')}`);
