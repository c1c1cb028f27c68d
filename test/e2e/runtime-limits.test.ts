import { existsSync, statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, nodeApp, startCodeDeployStand, type CodeDeployStand } from '../support/code-deploy-stand.js';
import { eventually } from '../support/service-process.js';

/**
 * resource_spec enforced by the sandboxed process runtime, through the real api, builder and
 * deployer: the memory limit (a rollout that runs out of memory fails with the reason; a running
 * instance that does is restarted), min_scale, continuous health (an instance that stops
 * answering is replaced, visible in deploy logs and the deployer's /metrics) and log rotation.
 */
const MEMORY_MB = 192;
/** Small, so a test fills an instance's log file past it quickly. */
const LOG_FILE_MB = 0.05;

const SERVER = `const http = require('node:http');
const held = [];
function hog() {
  // Twice the instance's memory, touched page by page.
  for (let n = 0; n < ${2 * MEMORY_MB}; n += 16) { const b = Buffer.alloc(16 << 20); b.fill(1); held.push(b); }
}
if (process.env.HOG_AT_START === '1') { console.log('hogging at start'); hog(); }
http.createServer((req, res) => {
  if (req.url === '/ok') return res.end('ok');
  if (req.url === '/pid') return res.end(String(process.pid));
  if (req.url === '/hog') { res.end('hogging'); return setTimeout(hog, 50); }
  if (req.url === '/hang') { res.end('hanging'); return setTimeout(() => { for (;;) {} }, 50); }
  if (req.url === '/spam') {
    for (let i = 0; i < 2000; i++) console.log('spam line ' + i + ' ' + 'x'.repeat(80));
    console.log('spam done');
    return res.end('spammed');
  }
  res.end('limits');
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('limits app listening'));
`;

let stand: CodeDeployStand;
let metricsPort: number;

beforeAll(async () => {
  metricsPort = await freePort();
  stand = await startCodeDeployStand(
    {},
    { SLIPWAY_WORKER_HEALTH_PORT: String(metricsPort), SLIPWAY_RUNTIME_LOG_FILE_MB: String(LOG_FILE_MB) },
  );
  stand.commit('memhog', nodeApp('memhog', SERVER));
  stand.commit('limits', nodeApp('limits', SERVER));
}, 120_000);

afterAll(async () => {
  await stand?.close();
}, 60_000);

const running = (deploymentId: string) =>
  stand.api.dataSource.query(
    `SELECT id, pid, port, log_path FROM runtime_processes WHERE deployment_id = $1 AND status = 'running' ORDER BY started_at`,
    [deploymentId],
  ) as Promise<Array<{ id: string; pid: number | null; port: number; log_path: string }>>;

const metrics = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();

describe('resource_spec and health in the sandboxed process runtime', () => {
  it('fails a rollout whose instance runs out of memory with the reason and the limit', async () => {
    const { deploymentId, revisionId } = await stand.deploy('memhog', {
      resourceSpec: { memory_mb: MEMORY_MB },
      secrets: { HOG_AT_START: '1' },
    });
    const rev = await stand.untilDone(deploymentId, revisionId);
    expect(rev.status).toBe('DEPLOY_FAILED');
    expect(rev.status_message).toContain(`out of memory (limit ${MEMORY_MB} MB)`);
    const deployLog = (await stand.logLines(deploymentId, revisionId, 'deploy')).join('\n');
    expect(deployLog).toContain(`out of memory (limit ${MEMORY_MB} MB)`);
  }, 300_000);

  let deploymentId: string;
  let revisionId: string;
  let url: string;

  it('runs min_scale instances', async () => {
    ({ deploymentId, revisionId } = await stand.deploy('limits', {
      resourceSpec: { memory_mb: MEMORY_MB, cpu: 0.5, min_scale: 2, max_scale: 2 },
    }));
    const rev = await stand.untilDone(deploymentId, revisionId);
    expect(rev.status, rev.status_message).toBe('DEPLOYED');
    url = (await stand.http.get(`/v2/deployments/${deploymentId}`)).body.url;
    expect(await running(deploymentId)).toHaveLength(2);
  }, 300_000);

  it('restarts an instance that exceeds its memory later, with the reason in the deploy log', async () => {
    const before = await running(deploymentId);
    expect((await fetch(`${url}/hog`)).status).toBe(200);
    const deployLog = await eventually(
      async () => (await stand.logLines(deploymentId, revisionId, 'deploy')).join('\n'),
      (log) => /was killed: out of memory \(limit \d+ MB\); restarting/.test(log),
      120_000,
      500,
    );
    expect(deployLog).toContain(`out of memory (limit ${MEMORY_MB} MB); restarting`);
    // Back to two healthy instances, one of them a new process on the same row.
    const after = await eventually(
      () => running(deploymentId),
      (rows) => rows.length === 2 && rows.every((r) => r.pid) && rows.some((r) => !before.some((b) => b.pid === r.pid)),
      120_000,
      500,
    );
    expect(after.map((r) => r.id).sort()).toEqual(before.map((r) => r.id).sort());
    await eventually(
      async () => (await fetch(`${url}/`)).status,
      (s) => s === 200,
      60_000,
      500,
    );
    expect(await metrics()).toMatch(
      /slipway_runtime_instance_events_total\{[^}]*event="restarted"[^}]*reason="out_of_memory"[^}]*\} [1-9]/,
    );
  }, 300_000);

  it('replaces an instance that stops answering its health probe; the proxy keeps serving from the healthy one', async () => {
    expect((await fetch(`${url}/hang`)).status).toBe(200);
    const deployLog = await eventually(
      async () => (await stand.logLines(deploymentId, revisionId, 'deploy')).join('\n'),
      (log) => log.includes('stopped answering its health probe'),
      120_000,
      500,
    );
    expect(deployLog).toMatch(/stopped answering its health probe \(\d+ failures in a row\); restarting/);
    // The hung instance is out of the proxy's targets: every request is answered by a healthy one.
    for (let i = 0; i < 10; i++) {
      const res = await fetch(`${url}/`, { signal: AbortSignal.timeout(10_000) });
      expect(res.status).toBe(200);
    }
    const text = await metrics();
    expect(text).toMatch(/slipway_runtime_instance_events_total\{[^}]*event="unhealthy"[^}]*\} [1-9]/);
    expect(text).toMatch(
      /slipway_runtime_instance_events_total\{[^}]*event="restarted"[^}]*reason="unhealthy"[^}]*\} [1-9]/,
    );
    await eventually(
      () => running(deploymentId),
      (rows) => rows.length === 2 && rows.every((r) => r.pid),
      120_000,
      500,
    );
  }, 300_000);

  it("rotates an instance's log file past its cap; the deploy log keeps every line", async () => {
    const rows = await running(deploymentId);
    // Both instances get a request (round robin), each writing ~170 KB.
    for (let i = 0; i < 2; i++) expect((await fetch(`${url}/spam`)).status).toBe(200);
    const cap = LOG_FILE_MB * 1024 * 1024;
    await eventually(
      async () => rows.filter((r) => existsSync(`${r.log_path}.1`)).length,
      (n) => n >= 1,
      60_000,
      300,
    );
    // Once the tailer has copied the burst, the live files are cut back under the cap.
    await eventually(
      async () => rows.map((r) => (existsSync(r.log_path) ? statSync(r.log_path).size : 0)),
      (sizes) => sizes.every((size) => size < cap),
      60_000,
      300,
    );
    const lines = await eventually(
      () => stand.logLines(deploymentId, revisionId, 'deploy'),
      (l) => l.filter((x) => x.includes('spam done')).length >= 1,
      60_000,
      500,
    );
    // Nothing lost in the deploy log across the rotation (the instance that rotated wrote all 2000).
    const spam = lines.filter((l) => /^spam line \d+ /.test(l));
    expect(spam.length).toBeGreaterThanOrEqual(2000);
  }, 180_000);
});
