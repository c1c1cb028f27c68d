import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploymentDatabaseName } from '@slipway/domain';
import { isProcessAlive } from '@slipway/runtime';
import { keepProbing, nodeApp, startCodeDeployStand, type CodeDeployStand } from '../support/code-deploy-stand.js';
import { HOSTILE_SERVER } from '../support/hostile-app.js';

/**
 * Issue 7's hostile app, through the real api, builder and deployer processes with the sandbox
 * on (the harness runs as root with bubblewrap, cgroups and nftables): a deployed server tries
 * everything an app must not do and reports what it got; every attempt is asserted separately,
 * while a well-behaved deployment keeps answering and the api stays ready.
 *
 * Follow-up: the same attempts from the BUILD step (package.json `build`) once the builder runs
 * builds in the sandbox.
 */
const PIDS_MAX = 128;
const OPEN_FILES = 2048;
const MEMORY_MB = 192;

let stand: CodeDeployStand;
let friendly: { deploymentId: string; revisionId: string; url: string; pid: number };
let hostile: { deploymentId: string; revisionId: string; url: string };
/** What the control plane must never hand an app. */
let crown: { databaseUrl: string; redisUrl: string; secretsKey: string };

const FRIENDLY_SERVER = `require('node:http').createServer((req, res) => res.end('friendly')).listen(Number(process.env.PORT), '127.0.0.1');\n`;

beforeAll(async () => {
  stand = await startCodeDeployStand({ SLIPWAY_SANDBOX_PIDS_MAX: String(PIDS_MAX), SLIPWAY_SANDBOX_OPEN_FILES: String(OPEN_FILES) });
  const { api } = stand;
  crown = { databaseUrl: api.database.url, redisUrl: api.config.redisUrl, secretsKey: api.config.secretsKey.key.toString('base64') };
  // What a development install keeps in its data dir: canaries the app must not read.
  for (const [file, text] of [
    ['secrets.key', crown.secretsKey],
    ['bootstrap-api-key', api.adminKey],
  ]) {
    const at = path.join(api.config.dataDir, file!);
    if (!existsSync(at)) writeFileSync(at, text!, { mode: 0o600 });
  }

  stand.commit('friendly', nodeApp('friendly', FRIENDLY_SERVER));
  stand.commit('hostile', nodeApp('hostile', HOSTILE_SERVER));

  const f = await stand.deploy('friendly');
  const fRev = await stand.untilDone(f.deploymentId, f.revisionId);
  expect(fRev.status, fRev.status_message).toBe('DEPLOYED');
  const [proc] = await api.dataSource.query(`SELECT pid FROM runtime_processes WHERE deployment_id = $1 AND status = 'running'`, [f.deploymentId]);
  friendly = { ...f, url: (await stand.http.get(`/v2/deployments/${f.deploymentId}`)).body.url, pid: Number(proc.pid) };

  const dbUrl = new URL(api.database.url);
  const h = await stand.deploy('hostile', {
    resourceSpec: { memory_mb: MEMORY_MB, cpu: 1 },
    secrets: {
      DATA_DIR: api.config.dataDir,
      OTHER_PID: String(friendly.pid),
      OTHER_DB: deploymentDatabaseName('friendly', f.deploymentId),
      CONTROL_DB: dbUrl.pathname.slice(1),
      SUPERUSER: decodeURIComponent(dbUrl.username) || 'postgres',
      WORKER_PIDS: [stand.services.api.child.pid, stand.services.builder.child.pid, stand.services.deployer.child.pid, process.pid].join(','),
      MEMORY_MB: String(MEMORY_MB),
    },
  });
  const hRev = await stand.untilDone(h.deploymentId, h.revisionId);
  expect(hRev.status, hRev.status_message).toBe('DEPLOYED');
  hostile = { ...h, url: (await stand.http.get(`/v2/deployments/${h.deploymentId}`)).body.url };
}, 600_000);

afterAll(async () => {
  await stand?.close();
}, 60_000);

type Attempt = { ok: boolean; error?: string; value?: unknown };
type Run = { code: number | string; signal: string | null; out: string };

describe('a hostile app in the process runtime sandbox', () => {
  let report: Record<string, any>;
  let friendlyDuring: { failures: string[]; requests: number };
  let readyDuring: { failures: string[]; requests: number };

  it('runs its attack while the friendly deployment keeps answering and /readyz stays 200', async () => {
    const friendlyProbe = keepProbing(friendly.url);
    const readyProbe = keepProbing(`${stand.apiUrl}/readyz`);
    const res = await fetch(`${hostile.url}/attack`, { signal: AbortSignal.timeout(300_000) });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    report = JSON.parse(text);
    // A while longer: the aftermath (killed children, OOM accounting) must not hurt anyone either.
    await new Promise((r) => setTimeout(r, 2_000));
    friendlyDuring = await friendlyProbe.stop();
    readyDuring = await readyProbe.stop();
    expect(friendlyDuring.requests).toBeGreaterThan(10);
    expect(friendlyDuring.failures).toEqual([]);
    expect(readyDuring.requests).toBeGreaterThan(10);
    expect(readyDuring.failures).toEqual([]);
  }, 320_000);

  it('runs as its own unprivileged uid with an environment built from scratch', () => {
    expect(report.uid).toBeGreaterThanOrEqual(stand.api.config.sandbox.uidMin);
    expect(report.uid).toBeLessThanOrEqual(stand.api.config.sandbox.uidMax);
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'SLIPWAY_SECRETS_KEY', 'SLIPWAY_BOOTSTRAP_API_KEY']) expect(report.env).not.toHaveProperty(name);
  });

  it('runs with the open-files limit', () => {
    expect((report.limits as Attempt).value).toMatch(new RegExp(`Max open files\\s+${OPEN_FILES}\\s+${OPEN_FILES}\\s`));
  });

  it('cannot read /proc/1/environ', () => {
    const got = report.proc1Environ as Attempt;
    expect(got.ok, JSON.stringify(got)).toBe(false);
  });

  it("sees only its own processes in /proc and no worker's environment", () => {
    const scan = report.procScan as { pids: number[]; environs: Record<string, Attempt> };
    // A PID namespace of its own: a handful of processes (bubblewrap's init, npm, sh, node, psql leftovers at most).
    expect(scan.pids.length).toBeLessThan(20);
    for (const [pid, got] of Object.entries(report.workerEnvirons as Record<string, Attempt>)) {
      expect(got.ok, `worker pid ${pid}: ${JSON.stringify(got).slice(0, 200)}`).toBe(false);
    }
  });

  it("cannot read the data dir's secrets.key or bootstrap key", () => {
    expect((report.secretsKey as Attempt).ok).toBe(false);
    expect((report.bootstrapKey as Attempt).ok).toBe(false);
  });

  it("cannot list the data dir, other deployments' artifacts, builds or runtime files", () => {
    const dataDir = stand.api.config.dataDir;
    for (const dir of [dataDir, `${dataDir}/artifacts`, `${dataDir}/runtime`, `${dataDir}/builds`]) {
      const got = report.listings[dir] as Attempt;
      expect(got.ok, `${dir}: ${JSON.stringify(got)}`).toBe(false);
    }
  });

  it('cannot kill -9 a process of another deployment', () => {
    expect((report.killOther as Attempt).ok).toBe(false);
    expect(isProcessAlive(friendly.pid)).toBe(true);
  });

  it('reaches only its own Redis keys: FLUSHALL, CONFIG GET * and foreign keys are denied', () => {
    expect((report.redisOwnKey as Run).out).toBe('OK');
    for (const name of ['redisFlushAll', 'redisConfigGet', 'redisOtherKey']) {
      const got = report[name] as Run;
      expect(got.out, name).toMatch(/NOPERM|no permissions/i);
    }
  });

  it('cannot reach Redis directly on 127.0.0.1:6379', () => {
    const got = report.redisDirect as Run;
    expect(got.out).not.toContain('PONG');
    expect(got.code).not.toBe(0);
  });

  it("connects to its own database, and to neither the control plane's nor another deployment's", () => {
    expect((report.pgOwn as Run).code, (report.pgOwn as Run).out).toBe(0);
    for (const name of ['pgControlPlane', 'pgOtherDeployment', 'pgSuperuserThroughFront']) {
      const got = report[name] as Run;
      expect(got.code, `${name}: ${got.out}`).not.toBe(0);
    }
  });

  it('cannot reach Postgres directly on 127.0.0.1:5432 as the superuser', () => {
    const got = report.pgSuperuserDirect as Run;
    expect(got.code, got.out).not.toBe(0);
  });

  it('has its fork bomb stopped at the pids limit', () => {
    const bomb = report.forkBomb as { peakProcesses: number; afterKill: number };
    // It did fork (so the limit, not a broken bomb, stopped it)…
    expect(bomb.peakProcesses).toBeGreaterThan(PIDS_MAX / 4);
    // …and never beyond the instance's pids limit (threads count against it too).
    expect(bomb.peakProcesses).toBeLessThanOrEqual(PIDS_MAX);
  });

  it('has the child allocating twice its memory_mb killed at the memory limit, while its server lives on', async () => {
    const memory = report.memory as { signal: string | null; reachedMb: number; done: boolean };
    expect(memory.done, JSON.stringify(memory)).toBe(false);
    expect(memory.signal, JSON.stringify(memory)).toBe('SIGKILL');
    // It did allocate (so the limit, not a broken child, stopped it), and never twice its memory.
    expect(memory.reachedMb).toBeGreaterThanOrEqual(16);
    expect(memory.reachedMb).toBeLessThan(2 * MEMORY_MB);
    expect(report.stillAlive).toBe(true);
    expect((await fetch(`${hostile.url}/ok`)).status).toBe(200);
  });

  it("never sees or logs the control plane's DATABASE_URL, REDIS_URL or secrets key", async () => {
    const reported = JSON.stringify(report);
    const logged = [
      ...(await stand.logLines(hostile.deploymentId, hostile.revisionId, 'build')),
      ...(await stand.logLines(hostile.deploymentId, hostile.revisionId, 'deploy')),
    ].join('\n');
    expect(logged).toContain('hostile app listening');
    for (const [what, value] of Object.entries(crown)) {
      expect(reported.includes(value), `${what} in the report`).toBe(false);
      expect(logged.includes(value), `${what} in the logs`).toBe(false);
    }
  });
});
