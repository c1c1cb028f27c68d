import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isProcessAlive } from '@slipway/runtime';
import { killGroup, processesUnder } from '../support/app-processes.js';
import { addBuiltRevision as addBuiltRevisionFor } from '../support/built-revision.js';
import { nonLoopbackAddress, tryConnect } from '../support/ports.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The process runtime end to end: a real deployer process runs built artifacts (written here in
 * the builder's artifact layout, so no builder is needed) as local server processes behind the
 * deployment's serving proxy. Revisions enter the pipeline as the api's own code makes them
 * (row + RevisionFlow.admit + outbox relay).
 */
const SECRET = 'process-runtime-secret-5d1e8b';
// A port range of its own, unlikely to clash with other test files or services.
const PORT_MIN = 31_000 + Math.floor(Math.random() * 900);
const RUNTIME_ENV = { SLIPWAY_RUNTIME_PORT_MIN: String(PORT_MIN), SLIPWAY_RUNTIME_PORT_MAX: String(PORT_MIN + 99) };

let api: TestApi;
let deployer: ServiceProcess;
/** Every pid the runtime ever recorded, so afterAll can kill what the test left running. */
const seenPids = new Set<number>();

beforeAll(async () => {
  api = await startTestApi(RUNTIME_ENV);
  api.relay.start();
  deployer = await startService('deployer', serviceEnv(api, RUNTIME_ENV));
}, 60_000);

afterAll(async () => {
  await deployer?.stop('SIGKILL');
  // Instances outlive the deployer by design: stop every group this test started.
  if (api) {
    for (const pid of seenPids) killGroup(pid);
    for (const p of processesUnder(api.config.dataDir)) killGroup(p.pgrp);
  }
  await api?.close();
}, 60_000);

// ------------------------------------------------------------------ artifacts

const SERVER = (version: string) => `import http from 'node:http';
const VERSION = ${JSON.stringify(version)};
console.log('probe-app ' + VERSION + ' starting with MY_SECRET=' + process.env.MY_SECRET);
const server = http.createServer((req, res) => {
  if (req.url === '/ok') return res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  if (req.url === '/version') {
    const db = process.env.DATABASE_URI ? new URL(process.env.DATABASE_URI).pathname.slice(1) : null;
    return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
      version: VERSION,
      pid: process.pid,
      uid: process.getuid(),
      secret: process.env.MY_SECRET === ${JSON.stringify(SECRET)},
      database: db,
      redis: !!process.env.REDIS_URI,
      redisPrefix: process.env.REDIS_PREFIX ?? null,
      nodeEnv: process.env.NODE_ENV,
      leaked: ['DATABASE_URL', 'SLIPWAY_SECRETS_KEY', 'REDIS_URL'].filter((k) => k in process.env),
    }));
  }
  res.writeHead(404).end();
});
server.listen(Number(process.env.PORT), () => console.log('probe-app ' + VERSION + ' listening on ' + process.env.PORT));
process.on('SIGTERM', () => {
  console.log('probe-app ' + VERSION + ' stopping');
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 3000).unref();
});
`;

const CRASHER = `console.log('crash-app starting');
console.error('could not migrate ' + process.env.DATABASE_URI);
console.error('fatal: the model provider rejected key ' + process.env.MY_SECRET);
process.exit(1);
`;

const addBuiltRevision = (deploymentId: string, server: string) => addBuiltRevisionFor(api, deploymentId, server);

// ------------------------------------------------------------------ helpers

interface ProcessRow {
  id: string;
  revision_id: string;
  pid: number | null;
  port: number;
  status: string;
  log_path: string;
  /** Its sandbox's namespace address (null: unsandboxed, on the runtime host). */
  address: string | null;
}

async function processRows(deploymentId: string): Promise<ProcessRow[]> {
  const rows: ProcessRow[] = await api.dataSource.query(
    `SELECT id, revision_id, pid, port, status, log_path, address FROM runtime_processes WHERE deployment_id = $1 ORDER BY started_at`,
    [deploymentId],
  );
  for (const r of rows) if (r.pid) seenPids.add(r.pid);
  return rows;
}

const revisionOf = async (deploymentId: string, revisionId: string) =>
  (await api.http.get(`/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body;

async function untilSettled(deploymentId: string, revisionId: string, timeoutMs = 60_000) {
  return eventually(
    () => revisionOf(deploymentId, revisionId),
    (r) => ['DEPLOYED', 'DEPLOY_FAILED', 'INTERRUPTED', 'CREATE_FAILED'].includes(r.status),
    timeoutMs,
    200,
  );
}

/** GET, bounded; null on any network error. */
async function get(url: string): Promise<{ status: number; body: any } | null> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    const text = await res.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.status, body };
  } catch {
    return null;
  }
}

async function deployLogs(revisionId: string): Promise<string[]> {
  const rows: Array<{ message: string }> = await api.dataSource.query(
    `SELECT message FROM revision_logs WHERE revision_id = $1 AND type = 'deploy' ORDER BY id`,
    [revisionId],
  );
  return rows.map((r) => r.message);
}

// ------------------------------------------------------------------ the flow

describe('process runtime (real deployer, real processes)', () => {
  let deploymentId: string;
  let url: string;
  let v1: string;
  let v2: string;

  it('deploys an upload revision: DEPLOYED, url serves it with its secrets and own database', async () => {
    const created = await api.http.post('/v2/deployments', {
      name: 'probe-app',
      source: 'upload',
      source_config: {},
      source_revision_config: {},
      secrets: [{ name: 'MY_SECRET', value: SECRET }],
    });
    expect(created.status, created.text).toBe(201);
    deploymentId = created.body.id;
    expect(created.body.url).toBeNull();

    v1 = await addBuiltRevision(deploymentId, SERVER('v1'));
    const rev = await untilSettled(deploymentId, v1);
    expect(rev.status, rev.status_message).toBe('DEPLOYED');

    const d = (await api.http.get(`/v2/deployments/${deploymentId}`)).body;
    const [row] = await api.dataSource.query(`SELECT serving_port, database_name FROM deployments WHERE id = $1`, [
      deploymentId,
    ]);
    expect(row.serving_port).toBeGreaterThanOrEqual(PORT_MIN);
    expect(row.serving_port).toBeLessThanOrEqual(PORT_MIN + 99);
    url = `http://127.0.0.1:${row.serving_port}`;
    expect(d).toMatchObject({ status: 'READY', active_revision_id: v1, url });
    expect(d.source_config.custom_url).toBe(url);

    const version = await get(`${url}/version`);
    expect(version?.status).toBe(200);
    expect(version?.body).toMatchObject({
      version: 'v1',
      secret: true,
      database: row.database_name,
      redis: true,
      redisPrefix: `slipway-d-${deploymentId}`,
      nodeEnv: 'production',
      leaked: [],
    });
    // As root (CI, this harness) the sandbox is on: the app runs as the deployment's own uid.
    if (process.getuid?.() === 0) {
      const [{ sandbox_uid }] = await api.dataSource.query(`SELECT sandbox_uid FROM deployments WHERE id = $1`, [
        deploymentId,
      ]);
      expect(sandbox_uid).toBeGreaterThanOrEqual(api.config.sandbox.uidMin);
      expect(version?.body.uid).toBe(sandbox_uid);
    }
    const [db] = await api.dataSource.query(`SELECT 1 AS found FROM pg_database WHERE datname = $1`, [
      row.database_name,
    ]);
    expect(db?.found).toBe(1);

    const rows = await processRows(deploymentId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ revision_id: v1, status: 'running' });
    expect(isProcessAlive(rows[0]!.pid)).toBe(true);
    expect(rows[0]!.log_path).toBe(path.join(api.config.dataDir, 'runtime', deploymentId, `${v1}-0.log`));
    // The instance is the app itself (its group leader is the recorded pid).
    expect(processesUnder(api.config.dataDir).every((p) => p.pgrp === rows[0]!.pid)).toBe(true);
  }, 90_000);

  it("listens in its own network namespace: its port, bound on every interface, is on none of the host's addresses", async (ctx) => {
    if (process.getuid?.() !== 0) return ctx.skip('the sandbox (and its network namespace) needs root');
    const address = nonLoopbackAddress();
    if (!address) return ctx.skip('this machine has no non-loopback IPv4 address to connect through');
    // The probe app listens without a host: every interface, as a careless app would.
    const [instance] = (await processRows(deploymentId)).filter((r) => r.status === 'running');
    expect(instance?.address).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(await tryConnect(instance!.address!, instance!.port)).toBe('connected');
    expect(await tryConnect('127.0.0.1', instance!.port)).toBe('refused');
    expect(await tryConnect(address, instance!.port)).toBe('refused');
    expect((await get(`${url}/version`))?.status).toBe(200);
  }, 30_000);

  it('rolls v2 out under continuous traffic without a failed request; v1 is stopped afterwards', async () => {
    const results: Array<{ status: number; version: string | null }> = [];
    let probing = true;
    const probeUntil = Date.now() + 80_000;
    const probe = (async () => {
      while (probing && Date.now() < probeUntil) {
        const res = await get(`${url}/version`);
        results.push({ status: res?.status ?? 0, version: res?.body?.version ?? null });
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    try {
      const [before] = await processRows(deploymentId);
      v2 = await addBuiltRevision(deploymentId, SERVER('v2'));
      const rev = await untilSettled(deploymentId, v2);
      expect(rev.status, rev.status_message).toBe('DEPLOYED');
      await eventually(
        () => get(`${url}/version`),
        (r) => r?.body?.version === 'v2',
        10_000,
      );
      // v1 gets SIGTERM after the drain; its process group must be gone, its row exited.
      await eventually(
        async () => isProcessAlive(before!.pid),
        (alive) => !alive,
        20_000,
        200,
      );
      await eventually(
        async () => (await processRows(deploymentId)).find((r) => r.id === before!.id)?.status,
        (s) => s === 'exited',
        20_000,
        200,
      );
      await new Promise((r) => setTimeout(r, 500));
    } finally {
      probing = false;
      await probe;
    }
    expect(results.length).toBeGreaterThan(20);
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    const firstV2 = results.findIndex((r) => r.version === 'v2');
    expect(results[0]!.version).toBe('v1');
    expect(firstV2).toBeGreaterThan(0);
    // Once the switch happened, every later request was answered by v2.
    expect(results.slice(firstV2).filter((r) => r.version !== 'v2')).toEqual([]);

    const live = (await processRows(deploymentId)).filter((r) => r.status !== 'exited');
    expect(live.map((r) => r.revision_id)).toEqual([v2]);
    // Straight through the rollout states. A same-status retry by the reconciler (a heartbeat
    // missed on a starved CI machine) is tolerated: it changes nothing the client sees.
    for (const id of [v1, v2]) {
      const history: Array<{ from_status: string; to_status: string }> = await api.dataSource.query(
        `SELECT from_status, to_status FROM revision_events WHERE revision_id = $1 ORDER BY id`,
        [id],
      );
      const moves = history.filter((h) => h.from_status !== h.to_status).map((h) => h.to_status);
      expect(moves).toEqual(['AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED']);
    }
    expect(new Set(processesUnder(api.config.dataDir).map((p) => p.pgrp))).toEqual(new Set([live[0]!.pid]));
  }, 120_000);

  it('fails a revision that crashes at start with its last log lines (secret masked); v2 keeps serving', async () => {
    const crash = await addBuiltRevision(deploymentId, CRASHER);
    const rev = await untilSettled(deploymentId, crash);
    expect(rev.status).toBe('DEPLOY_FAILED');
    expect(rev.status_message).toContain('exited before it answered GET /ok');
    expect(rev.status_message).toContain('crash-app starting');
    expect(rev.status_message).toContain('fatal: the model provider rejected key ********');
    expect(rev.status_message).not.toContain(SECRET);
    // The deployment's own store password is masked like its secrets.
    expect(rev.status_message).toMatch(/could not migrate postgres(?:ql)?:\/\/[^:\s]+:\*{8}@/);

    expect((await get(`${url}/version`))?.body?.version).toBe('v2');
    expect((await api.http.get(`/v2/deployments/${deploymentId}`)).body.active_revision_id).toBe(v2);
    const crashRows = (await processRows(deploymentId)).filter((r) => r.revision_id === crash);
    expect(crashRows.length).toBeGreaterThan(0);
    expect(crashRows.every((r) => r.status === 'exited' && !isProcessAlive(r.pid))).toBe(true);
    const logs = await deployLogs(crash);
    expect(logs.some((l) => l.includes('fatal: the model provider rejected key ********'))).toBe(true);
  }, 90_000);

  it('stops an instance that never gets healthy when its revision is interrupted; v2 keeps serving', async () => {
    const sick = await addBuiltRevision(
      deploymentId,
      SERVER('sick').replace(
        `if (req.url === '/ok') return res.writeHead(200`,
        `if (req.url === '/ok') return res.writeHead(503`,
      ),
    );
    const starting = await eventually(
      async () =>
        (await processRows(deploymentId)).filter((r) => r.revision_id === sick && r.pid && isProcessAlive(r.pid)),
      (rows) => rows.length === 1,
      30_000,
      200,
    );
    expect((await revisionOf(deploymentId, sick)).status).toBe('DEPLOYING');
    const res = await api.http.post(`/v2/deployments/${deploymentId}/revisions/${sick}/interruption`);
    expect(res.status).toBe(200);
    await eventually(
      async () => isProcessAlive(starting[0]!.pid),
      (alive) => !alive,
      20_000,
      200,
    );
    await eventually(
      async () => (await processRows(deploymentId)).find((r) => r.id === starting[0]!.id)?.status,
      (s) => s === 'exited',
      10_000,
      200,
    );
    expect((await revisionOf(deploymentId, sick)).status).toBe('INTERRUPTED');
    expect((await get(`${url}/version`))?.body?.version).toBe('v2');
  }, 60_000);

  it('copies instance output into the deploy log of its revision, secrets masked', async () => {
    const logs = await eventually(
      () => deployLogs(v2),
      (l) => l.some((m) => m.includes('probe-app v2 listening on')),
      10_000,
    );
    expect(logs.some((m) => m.includes('probe-app v2 starting with MY_SECRET=********'))).toBe(true);
    expect(logs.some((m) => m.includes('All 1 instance(s) answer their health probe.'))).toBe(true);
    expect(logs.join('\n')).not.toContain(SECRET);
    // The API reads the same lines (docs/api.md, Revisions).
    const res = await api.http.get(`/v2/deployments/${deploymentId}/revisions/${v2}/logs?type=deploy&limit=1000`);
    if (res.status !== 404) {
      expect(res.status).toBe(200);
      expect(res.body.logs.some((l: { message: string }) => l.message.includes('probe-app v2 listening on'))).toBe(
        true,
      );
    }
    // v1's output ends with its shutdown, copied after it stopped.
    expect(await deployLogs(v1)).toEqual(expect.arrayContaining([expect.stringContaining('probe-app v1 stopping')]));
  }, 30_000);

  it('restarts an instance that was killed', async () => {
    const [before] = (await processRows(deploymentId)).filter((r) => r.status === 'running');
    process.kill(-before!.pid!, 'SIGKILL');
    const after = await eventually(
      async () => (await processRows(deploymentId)).find((r) => r.id === before!.id),
      (r) => !!r && r.status === 'running' && !!r.pid && r.pid !== before!.pid && isProcessAlive(r.pid),
      30_000,
      200,
    );
    const served = await eventually(
      () => get(`${url}/version`),
      (r) => r?.status === 200,
      15_000,
    );
    expect(served?.body).toMatchObject({ version: 'v2' });
    expect(after!.port).toBe(before!.port);
    // The restart is marked in the deploy log, followed by the new process's output.
    const logs = await eventually(
      () => deployLogs(v2),
      (l) =>
        l.findIndex((m) => m.includes('exited; restarting')) >= 0 &&
        l.filter((m) => m.includes('probe-app v2 listening on')).length >= 2,
      10_000,
    );
    const marker = logs.findIndex((m) => m.includes('exited; restarting'));
    expect(logs.slice(marker).some((m) => m.includes('probe-app v2 listening on'))).toBe(true);
  }, 60_000);

  it('keeps serving through a deployer crash; a new deployer re-adopts without duplicates and rolls out again', async () => {
    const [instance] = (await processRows(deploymentId)).filter((r) => r.status === 'running');
    // A graceful stop leaves the instances running as well (and releases the runtime lock).
    await deployer.stop('SIGTERM');
    expect((await deployer.exited).code).toBe(0);
    expect(isProcessAlive(instance!.pid)).toBe(true);
    deployer = await startService('deployer', serviceEnv(api, RUNTIME_ENV));
    await eventually(
      () => get(`${url}/version`),
      (r) => r?.body?.version === 'v2',
      20_000,
    );

    deployer.child.kill('SIGKILL');
    await deployer.exited;

    // The instance outlives the deployer: it still answers on its own port.
    const direct = await get(`http://${instance!.address ?? '127.0.0.1'}:${instance!.port}/version`);
    expect(direct?.body).toMatchObject({ version: 'v2', pid: expect.any(Number) });
    expect(isProcessAlive(instance!.pid)).toBe(true);

    deployer = await startService('deployer', serviceEnv(api, RUNTIME_ENV));
    await eventually(
      () => get(`${url}/version`),
      (r) => r?.body?.version === 'v2',
      20_000,
    );
    // Re-adopted, not restarted: same row, same pid, nothing else running.
    await new Promise((r) => setTimeout(r, 3_000));
    const live = (await processRows(deploymentId)).filter((r) => r.status !== 'exited');
    expect(live.map((r) => ({ id: r.id, pid: r.pid }))).toEqual([{ id: instance!.id, pid: instance!.pid }]);
    expect(new Set(processesUnder(api.config.dataDir).map((p) => p.pgrp))).toEqual(new Set([instance!.pid]));
    expect(deployer.output()).toMatch(/re-adopted a running instance/);

    const v3 = await addBuiltRevision(deploymentId, SERVER('v3'));
    const rev = await untilSettled(deploymentId, v3);
    expect(rev.status, rev.status_message).toBe('DEPLOYED');
    await eventually(
      () => get(`${url}/version`),
      (r) => r?.body?.version === 'v3',
      10_000,
    );
    await eventually(
      async () => isProcessAlive(instance!.pid),
      (alive) => !alive,
      20_000,
      200,
    );
  }, 120_000);

  it('a second deployer stands by without touching processes and takes over when the owner dies', async () => {
    const standby = await startService('deployer', serviceEnv(api, RUNTIME_ENV));
    try {
      expect(deployer.output()).toMatch(/runtime lock held/);
      // Whichever deployer's worker takes the job, only the owner starts processes.
      const v4 = await addBuiltRevision(deploymentId, SERVER('v4'));
      const rev = await untilSettled(deploymentId, v4);
      expect(rev.status, rev.status_message).toBe('DEPLOYED');
      await eventually(
        () => get(`${url}/version`),
        (r) => r?.body?.version === 'v4',
        10_000,
      );
      await eventually(
        async () => (await processRows(deploymentId)).filter((r) => r.status !== 'exited'),
        (live) => live.length === 1 && live[0]!.revision_id === v4,
        20_000,
        200,
      );
      expect(standby.output()).not.toMatch(/runtime lock held/);

      deployer.child.kill('SIGKILL');
      await deployer.exited;
      await standby.waitFor(/runtime lock held/, 15_000);
      await eventually(
        () => get(`${url}/version`),
        (r) => r?.body?.version === 'v4',
        15_000,
      );
      const live = (await processRows(deploymentId)).filter((r) => r.status !== 'exited');
      expect(live).toHaveLength(1);
      expect(new Set(processesUnder(api.config.dataDir).map((p) => p.pgrp))).toEqual(new Set([live[0]!.pid]));
    } finally {
      deployer = standby;
    }
  }, 120_000);

  it('DELETE stops the processes, drops the database and closes the URL', async () => {
    const rows = await processRows(deploymentId);
    const [{ database_name: database }] = await api.dataSource.query(
      `SELECT database_name FROM deployments WHERE id = $1`,
      [deploymentId],
    );
    const artifacts = (
      await api.dataSource.query(`SELECT id FROM revisions WHERE deployment_id = $1`, [deploymentId])
    ).map((r: any) => path.join(api.config.dataDir, 'artifacts', r.id));
    expect(artifacts.some((dir: string) => existsSync(dir))).toBe(true);
    const res = await api.http.delete(`/v2/deployments/${deploymentId}`);
    expect(res.status).toBe(204);
    await eventually(
      async () => (await api.http.get(`/v2/deployments/${deploymentId}`)).status,
      (s) => s === 404,
      30_000,
      200,
    );

    expect(rows.filter((r) => isProcessAlive(r.pid))).toEqual([]);
    expect(processesUnder(api.config.dataDir)).toEqual([]);
    expect(await api.dataSource.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [database])).toEqual([]);
    expect(await get(`${url}/version`)).toBeNull();
    // Its files go too: every revision's artifact.
    expect(artifacts.filter((dir: string) => existsSync(dir))).toEqual([]);
  }, 60_000);
});
