import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killGroup, processesUnder } from '../support/app-processes.js';
import { deployBuiltApp } from '../support/built-revision.js';
import { freePort } from '../support/ports.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * UNUSED from real activity through a real deployer process: requests its serving proxy lets
 * through move `last_activity_at` and bring an UNUSED deployment back to READY; refused requests
 * and health probes do not. The deployment is aged with SQL instead of waiting 28 days.
 */
const PORT_MIN = 37_000 + Math.floor(Math.random() * 900);
const RUNTIME_ENV = { SLIPWAY_RUNTIME_PORT_MIN: String(PORT_MIN), SLIPWAY_RUNTIME_PORT_MAX: String(PORT_MIN + 99) };

const APP =
  `import http from 'node:http';
const server = http.createServer((req, res) => res.writeHead(200, { 'content-type': ` +
  `'application/json' }).end(JSON.stringify({ url: req.url })));
server.listen(Number(process.env.PORT));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`;

let api: TestApi;
let deployer: ServiceProcess;
let deploymentId: string;
let serving: string;
let key: string;

beforeAll(async () => {
  api = await startTestApi(RUNTIME_ENV);
  api.relay.start();
  deployer = await startService(
    'deployer',
    serviceEnv(api, { ...RUNTIME_ENV, SLIPWAY_WORKER_HEALTH_PORT: String(await freePort()) }),
  );
  // An agent server: its serving URL wants a workspace key, so a refused request can be sent.
  const deployed = await deployBuiltApp(api, 'busy-agent', APP, { agent_server: { auth_path: null } });
  deploymentId = deployed.deploymentId;
  serving = `http://127.0.0.1:${deployed.servingPort}`;
  key = await api.mintKey({ role: 'member' });
}, 120_000);

afterAll(async () => {
  await deployer?.stop('SIGKILL');
  if (api) for (const p of processesUnder(api.config.dataDir)) killGroup(p.pgrp);
  await api?.close();
}, 60_000);

const state = async (): Promise<{ status: string; idle_days: number }> =>
  (
    await api.dataSource.query(
      `SELECT status, extract(epoch FROM now() - last_activity_at)::float / 86400 AS idle_days FROM deployments WHERE id = $1`,
      [deploymentId],
    )
  )[0];

describe('activity through the serving URL', () => {
  it('an admitted request brings an UNUSED deployment back to READY; a refused one and /ok do not count', async () => {
    // 60 days without a redeploy or a request: the reaper made it UNUSED.
    await api.dataSource.query(
      `UPDATE deployments SET status = 'UNUSED', last_activity_at = now() - interval '60 days' WHERE id = $1`,
      [deploymentId],
    );

    expect((await fetch(`${serving}/ok`)).status).toBe(200);
    expect((await fetch(`${serving}/threads`)).status).toBe(401);
    // Nothing to wait for but the deployer's own asynchronous write: give it the time a counted one takes.
    await new Promise((r) => setTimeout(r, 1_000));
    const before = await state();
    expect(before.status).toBe('UNUSED');
    expect(before.idle_days).toBeGreaterThan(59);

    const res = await fetch(`${serving}/threads/search`, { headers: { 'x-api-key': key } });
    expect(res.status).toBe(200);
    const after = await eventually(state, (s) => s.status === 'READY', 10_000);
    expect(after.idle_days * 86_400).toBeLessThan(10);

    // Within the minute another request writes nothing (the throttle): the timestamp stays.
    const [{ at }] = await api.dataSource.query(`SELECT last_activity_at AS at FROM deployments WHERE id = $1`, [
      deploymentId,
    ]);
    expect((await fetch(`${serving}/again`, { headers: { 'x-api-key': key } })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 500));
    const [{ at: later }] = await api.dataSource.query(`SELECT last_activity_at AS at FROM deployments WHERE id = $1`, [
      deploymentId,
    ]);
    expect(later).toEqual(at);
  }, 60_000);
});
