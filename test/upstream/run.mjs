// Runs a suite of the published LangGraph.js server's own tests (libs/langgraph-api/tests of
// langchain-ai/langgraphjs) against the Slipway agent server host, with one or two instances:
// `api` (api.test.mts, the default) or `auth` (auth.test.mts, custom auth).
//
//   pnpm test:upstream <langgraphjs checkout> [--suite api|auth] [--instances 2]   (tsx: it imports the builder's TypeScript)
//
// The suite is not in this repository and not in the npm package (`@langchain/langgraph-api`
// ships dist/ only): give it a checkout of langgraphjs, at the tag of the pinned server version
// where one can be had (test/upstream/README.md). Nothing of it is copied into this repository;
// it is copied into a temporary directory with its fixture graphs, installed from the npm
// registry, and run there unchanged.
//
// What the runner sets up (configuration only): a database of its own and a Redis prefix of its
// own; the host (services/agent-server, installed as the builder installs it) serving the
// suite's graph config (tests/graphs/langgraph.json, or langgraph.auth.json for `auth`) with
// that file's `env` in its environment, as a deployment gets it; and either the one instance or
// a round-robin proxy in front of two instances (each request to either, as the serving URL
// spreads them). The suites' non-configuration adaptations: they call http://localhost:2024
// (2025 for `auth`), hard-coded, and those ports are not free on every machine, so the copy's
// address is replaced by the front's; the auth suite's filter-matching cases import the
// server's source (`../src/auth/index.mjs`), which is not copied: they get the installed
// server's dist/auth/index.mjs, the module the host runs. A suite starts its own server when CI
// is set: the runner unsets CI for it. The cases of skips.json (by suite) are left out, each
// with its reason printed.
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
// The host as the builder lays it into an artifact, its TypeScript compiled (run under tsx: `pnpm test:upstream`).
import { AGENT_SERVER_HOST_ENTRY, copyAgentServerHost } from '../../services/builder/src/agent-server-host.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '../..');
const HOST = path.join(REPO, 'services/agent-server');

/** Each suite: its file in tests/, the graph config it is served with, the address it calls. */
const SUITES = {
  api: { file: 'api.test.mts', config: 'langgraph.json', address: 'localhost:2024' },
  auth: { file: 'auth.test.mts', config: 'langgraph.auth.json', address: 'localhost:2025' },
};

const [checkout, ...rest] = process.argv.slice(2);
const option = (name, fallback) => (rest.includes(name) ? rest[rest.indexOf(name) + 1] : fallback);
const instances = Number(option('--instances', 1));
const suiteName = option('--suite', 'api');
const suite = SUITES[suiteName];
if (
  !checkout ||
  !suite ||
  !existsSync(path.join(checkout, 'libs/langgraph-api/tests', suite.file)) ||
  ![1, 2].includes(instances)
) {
  console.error('usage: pnpm test:upstream <langgraphjs checkout> [--suite api|auth] [--instances 1|2]');
  process.exit(2);
}
const pinned = JSON.parse(readFileSync(path.join(HOST, 'package.json'), 'utf8')).dependencies[
  '@langchain/langgraph-api'
];
const suiteVersion = JSON.parse(readFileSync(path.join(checkout, 'libs/langgraph-api/package.json'), 'utf8')).version;
if (suiteVersion !== pinned)
  console.warn(`upstream suite: the checkout's suite is of ${suiteVersion}, the host serves ${pinned}`);

const sh = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: 'inherit' });
const children = [];
const work = mkdtempSync(path.join(tmpdir(), 'slipway-upstream-'));
const dbName = `slipway_upstream_${process.pid}`;
const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

async function admin(sql) {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

async function freePort() {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

async function untilUp(port) {
  for (let i = 0; i < 360; i++) {
    if (
      await fetch(`http://127.0.0.1:${port}/ok`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`the host on port ${port} did not come up`);
}

/** A round-robin HTTP proxy on `port` (streams pass through as they come). */
function roundRobin(port, targets) {
  let next = 0;
  const server = http.createServer((req, res) => {
    const up = http.request(
      {
        host: '127.0.0.1',
        port: targets[next++ % targets.length],
        path: req.url,
        method: req.method,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode, answer.headers);
        answer.pipe(res);
      },
    );
    up.on('error', (err) => res.writeHead(502).end(String(err)));
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  return new Promise((resolve, reject) =>
    server.once('error', reject).listen(port, '127.0.0.1', () => resolve(server)),
  );
}

let failed = true;
let proxy;
try {
  // The suite, its fixture graphs and their dependencies (the versions the host pins).
  cpSync(path.join(checkout, 'libs/langgraph-api/tests'), path.join(work, 'tests'), { recursive: true });
  const hostDeps = JSON.parse(readFileSync(path.join(HOST, 'package.json'), 'utf8')).dependencies;
  const pick = (...names) => Object.fromEntries(names.map((n) => [n, hostDeps[n]]));
  writeFileSync(
    path.join(work, 'package.json'),
    JSON.stringify({
      name: 'slipway-upstream-suite',
      private: true,
      type: 'module',
      dependencies: {
        ...pick(
          '@langchain/core',
          '@langchain/langgraph',
          '@langchain/langgraph-sdk',
          '@langchain/langgraph-checkpoint',
          'tsx',
        ),
        hono: '4.13.5',
        jose: '6.1.3',
        postgres: '3.4.7',
        'wait-port': '1.1.0',
        zod: '4.6.7',
        vitest: '4.1.12',
      },
    }),
  );
  writeFileSync(
    path.join(work, 'vitest.config.mjs'),
    `export default { test: { include: ["tests/${suite.file}"], testTimeout: 30_000, hookTimeout: 60_000, fileParallelism: false } };\n`,
  );
  sh('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--legacy-peer-deps'], work);
  // The host, installed as the builder installs it into an artifact.
  const hostDir = await copyAgentServerHost(work);
  sh('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts'], hostDir);

  await admin(`CREATE DATABASE ${dbName}`);
  const dbUrl = new URL(adminUrl);
  dbUrl.pathname = `/${dbName}`;
  const graphs = path.join(work, 'tests/graphs');
  const config = JSON.parse(readFileSync(path.join(graphs, suite.config), 'utf8'));
  const front = await freePort();
  const suiteFile = path.join(work, 'tests', suite.file);
  const serverAuth = pathToFileURL(
    path.join(hostDir, 'node_modules/@langchain/langgraph-api/dist/auth/index.mjs'),
  ).href;
  writeFileSync(
    suiteFile,
    readFileSync(suiteFile, 'utf8')
      .replaceAll(suite.address, `localhost:${front}`)
      .replaceAll('"../src/auth/index.mjs"', JSON.stringify(serverAuth)),
  );
  const ports = instances === 1 ? [front] : [await freePort(), await freePort()];
  for (const port of ports) {
    const child = spawn(process.execPath, [path.join(hostDir, AGENT_SERVER_HOST_ENTRY), suite.config], {
      cwd: graphs,
      env: {
        PATH: process.env.PATH,
        ...config.env,
        PORT: String(port),
        DATABASE_URI: dbUrl.toString(),
        REDIS_URI: redisUrl,
        REDIS_PREFIX: `slipway-upstream-${process.pid}:`,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.push(child);
    await untilUp(port);
  }
  if (instances === 2) proxy = await roundRobin(front, ports);

  const listed = JSON.parse(readFileSync(path.join(HERE, 'skips.json'), 'utf8'))[suiteName];
  const skips = { ...listed.always, ...(instances === 2 ? listed.twoInstances : {}) };
  for (const [name, reason] of Object.entries(skips)) console.log(`upstream suite: skipping "${name}": ${reason}`);
  const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = `^(?!(${Object.keys(skips).map(escape).join('|')})$)`;
  const { CI: _ci, ...env } = process.env;
  // Not execFileSync: the proxy lives in this process and must keep serving meanwhile.
  const tests = spawn('npx', ['vitest', 'run', '--reporter=verbose', '-t', pattern], {
    cwd: work,
    env,
    stdio: 'inherit',
  });
  const code = await new Promise((resolve) => tests.once('exit', resolve));
  if (code !== 0) throw new Error(`the suite failed (exit ${code})`);
  failed = false;
} catch (err) {
  console.error(`upstream suite: ${err.message}`);
} finally {
  proxy?.close();
  for (const child of children) child.kill('SIGKILL');
  await new Promise((r) => setTimeout(r, 500));
  await admin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch((err) =>
    console.error(`upstream suite: could not drop ${dbName}: ${err.message}`),
  );
  rmSync(work, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
