import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, nodeApp, startCodeDeployStand, type CodeDeployStand } from '../support/code-deploy-stand.js';
import { eventually } from '../support/service-process.js';
import { SseClient } from '../support/sse.js';

/**
 * What a running deployment shows of itself, through the real api, builder and deployer
 * (separate processes) and the sandboxed process runtime: its instances' output followed live
 * after the rollout ended (docs/api.md, Logs), and its numbers — requests by status class,
 * latency, CPU, memory, restarts, OOM kills — on GET /v2/deployments/{id}/metrics and on the
 * deployer's /metrics (docs/api.md, Metrics).
 */
const MEMORY_MB = 192;

const SERVER =
  `const http = require('node:http');
const held = [];
http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/ok') return res.end('ok');
  if (url.pathname === '/print') { console.log('printed ' + url.searchParams.get('m')); return res.end('printed'); }
  if (url.pathname === '/missing') { res.statusCode = 404; return res.end('no'); }
  if (url.pathname === '/hog') {
    res.end('hogging');
    return setTimeout(() => { for (let n = 0; n < ${2 * MEMORY_MB}; ` +
  `n += 16) { const b = Buffer.alloc(16 << 20); b.fill(1); held.push(b); } }, 50);
  }
  res.end('hello');
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('observed app listening'));
`;

let stand: CodeDeployStand;
let metricsPort: number;
let deploymentId: string;
let revisionId: string;
let url: string;

const metrics = async (window = '1h') => {
  const res = await stand.http.get(`/v2/deployments/${deploymentId}/metrics?window=${window}`);
  expect(res.status, res.text).toBe(200);
  return res.body;
};
/** Every request this file sends to the serving URL goes through here: the metrics must count exactly these. */
let sent = 0;
const hit = (path: string) => {
  sent += 1;
  return fetch(`${url}${path}`);
};
const sum = (points: Array<[number, number | null]>) => points.reduce((s, [, v]) => s + (v ?? 0), 0);

beforeAll(async () => {
  metricsPort = await freePort();
  stand = await startCodeDeployStand({}, { SLIPWAY_WORKER_HEALTH_PORT: String(metricsPort) });
  stand.commit('observed', nodeApp('observed', SERVER));
  ({ deploymentId, revisionId } = await stand.deploy('observed', {
    resourceSpec: { memory_mb: MEMORY_MB, min_scale: 1, max_scale: 1 },
  }));
  const rev = await stand.untilDone(deploymentId, revisionId);
  expect(rev.status, rev.status_message).toBe('DEPLOYED');
  const deployment = (await stand.http.get(`/v2/deployments/${deploymentId}`)).body;
  url = deployment.url;
  // A project with its own start script runs as is: not an agent server.
  expect(deployment.agent_server).toBe(false);
}, 300_000);

afterAll(async () => {
  await stand?.close();
}, 60_000);

describe("a running deployment's live log and metrics", () => {
  it('follows what a running instance prints after the rollout ended, within 2 s, and stays open', async () => {
    const follow = new SseClient(
      `${stand.apiUrl}/v2/deployments/${deploymentId}/revisions/${revisionId}/logs?type=deploy&follow=true`,
      {
        'x-api-key': stand.api.adminKey,
      },
    );
    try {
      await follow.until((events) => events.some((e) => e.data.message === 'observed app listening'), 30_000);
      const marker = `m-${Date.now()}`;
      expect((await hit(`/print?m=${marker}`)).status).toBe(200);
      const events = await follow.until((all) => all.some((e) => e.data.message === `printed ${marker}`), 2_000);
      expect(events.find((e) => e.data.message === `printed ${marker}`)!.data.instance).toBe(0);
      // The rollout is long over: the stream is still open and sent no end.
      expect(follow.ended).toBe(false);
      expect(events.some((e) => e.event === 'end')).toBe(false);
    } finally {
      follow.close();
    }
  }, 60_000);

  it('counts the requests it served by status class, with latency, CPU, memory and health', async () => {
    const OK = 17;
    const MISSING = 3;
    for (let i = 0; i < OK; i++) expect((await hit('/')).status).toBe(200);
    for (let i = 0; i < MISSING; i++) expect((await hit('/missing')).status).toBe(404);
    // Buckets are written once they are over (10 s, then within 5 s).
    const body = await eventually(
      () => metrics(),
      (b) => b.totals.requests >= sent,
      60_000,
      1_000,
    );
    expect(body.totals.requests).toBe(sent);
    expect(body.totals.errors_4xx).toBe(MISSING);
    expect(body.totals.errors_5xx).toBe(0);
    expect(sum(body.series.requests)).toBe(body.totals.requests);
    expect(body.window).toBe('1h');
    expect(body.step_seconds).toBe(60);
    expect(body.series.requests.length).toBeGreaterThanOrEqual(60);
    expect(body.totals.latency_p50_ms).toBeGreaterThan(0);
    expect(body.totals.latency_p99_ms).toBeGreaterThanOrEqual(body.totals.latency_p50_ms);
    expect(body.instances_expected).toBe(1);
    const withSamples = await eventually(
      () => metrics(),
      // The live sample comes first; the totals once a bucket holding one is written.
      (b) =>
        b.instances.length === 1 &&
        b.instances[0].memory_bytes > 0 &&
        b.instances[0].cpu_percent !== null &&
        b.instances[0].healthy === true &&
        b.totals.memory_bytes > 0,
      60_000,
      1_000,
    );
    const [instance] = withSamples.instances;
    expect(instance).toMatchObject({
      index: 0,
      revision_id: revisionId,
      status: 'running',
      restarts: 0,
      healthy: true,
    });
    expect(instance.memory_bytes).toBeLessThanOrEqual(MEMORY_MB * 1024 * 1024);
    expect(Date.parse(instance.last_health_check_at)).toBeGreaterThan(Date.now() - 60_000);
    expect(withSamples.totals.memory_bytes).toBeGreaterThan(0);

    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(text).toContain(
      `slipway_deployment_requests_total{deployment="${deploymentId}",status_class="4xx",service="deployer"} ${MISSING}`,
    );
    expect(text).toMatch(
      new RegExp(
        `slipway_deployment_instance_memory_bytes\\{deployment="${deploymentId}",instance="${instance.id}"[^}]*\\} [1-9]`,
      ),
    );
  }, 120_000);

  it('shows an instance killed for running out of memory as an OOM kill and a restart', async () => {
    expect((await hit('/hog')).status).toBe(200);
    const body = await eventually(
      () => metrics(),
      (b) => b.totals.oom_kills >= 1,
      120_000,
      1_000,
    );
    expect(body.totals.oom_kills).toBe(1);
    expect(body.totals.restarts).toBe(1);
    expect(sum(body.series.oom_kills)).toBe(1);
    const counted = await eventually(
      () => metrics(),
      (b) => b.totals.requests >= sent,
      60_000,
      1_000,
    );
    expect(counted.totals.requests).toBe(sent);
    const after = await eventually(
      () => metrics(),
      (b) => b.instances[0]?.restarts === 1,
      60_000,
      1_000,
    );
    expect(after.instances).toHaveLength(1);
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(text).toContain(`slipway_deployment_oom_kills_total{deployment="${deploymentId}",service="deployer"} 1`);
    expect(text).toContain(
      `slipway_deployment_restarts_total{deployment="${deploymentId}",reason="out_of_memory",service="deployer"} 1`,
    );
    // The 24 h window holds the same numbers in longer steps.
    const day = await metrics('24h');
    expect(day.step_seconds).toBe(600);
    expect(day.totals.requests).toBe(sent);
    expect(day.totals.oom_kills).toBe(1);
  }, 240_000);
});
