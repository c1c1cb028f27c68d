import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TenancyRepository } from '@slipway/db';
import { randomUUID } from 'node:crypto';
import { dottedSegment, langsmithClient, sendTrace } from '../support/langsmith.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Issue 34: a deployment's traces. The official langsmith client writes runs to the project
 * named like the deployment; `GET /v2/deployments/{id}/traces` lists their summaries
 * (docs/tracing.md), the deployment names its project as `tracer_session_id`, and a trace is
 * activity: an UNUSED deployment comes back to READY.
 */
let api: TestApi;
let listenerId: string;

beforeAll(async () => {
  api = await startTestApi({ SLIPWAY_RATE_LIMIT_PER_KEY: '100000' });
  const res = await api.http.post('/v2/listeners', {
    compute_type: 'k8s',
    compute_id: 'traces',
    compute_config: { k8s_namespaces: null },
  });
  listenerId = res.body.id;
});
afterAll(async () => {
  await api?.close();
});

let n = 0;
async function deployment(): Promise<{
  id: string;
  name: string;
  tracer_session_id: string;
  tracing_project_id: string;
}> {
  const res = await api.http.post('/v2/deployments', {
    name: `traced-${++n}-x`,
    source: 'external_container',
    source_config: { listener_id: listenerId },
    source_revision_config: { image_uri: 'registry.example/a:1' },
  });
  expect(res.status).toBe(201);
  return res.body;
}

const status = async (id: string): Promise<string> =>
  (await api.dataSource.query(`SELECT status FROM deployments WHERE id = $1`, [id]))[0].status;

describe('GET /v2/deployments/{id}/traces', () => {
  it("lists the traces of the deployment's project, newest first, paged, with their summaries", async () => {
    const d = await deployment();
    expect(d.tracer_session_id).toBeTruthy();
    expect(d.tracer_session_id).toBe(d.tracing_project_id);
    expect((await api.http.get(`/v2/deployments/${d.id}`)).body.tracer_session_id).toBe(d.tracing_project_id);

    const client = langsmithClient(api.baseUrl, api.adminKey);
    const now = Date.now();
    const older = await sendTrace(client, d.name, {
      start: new Date(now - 60_000),
      latencyMs: 2_000,
      name: 'first',
      metadata: { thread_id: 'th-a', revision_id: 'rev-1' },
    });
    const newer = await sendTrace(client, d.name, { start: new Date(now - 30_000), latencyMs: 500, name: 'second' });
    await sendTrace(client, 'not-this-deployment', { start: new Date(now - 10_000) });

    const all = await api.http.get(`/v2/deployments/${d.id}/traces`);
    expect(all.status).toBe(200);
    expect(all.body.offset).toBe(2);
    expect(all.body.resources.map((t: { trace_id: string }) => t.trace_id)).toEqual([newer.traceId, older.traceId]);
    expect(all.body.resources[1]).toEqual({
      trace_id: older.traceId,
      root_run_id: older.traceId,
      name: 'first',
      status: 'success',
      start_time: new Date(now - 60_000).toISOString(),
      end_time: new Date(now - 58_000).toISOString(),
      latency: 2,
      run_count: 2,
      error_count: 0,
      prompt_tokens: 7,
      completion_tokens: 3,
      total_tokens: 10,
      thread_id: 'th-a',
      revision_id: 'rev-1',
      session_id: d.tracing_project_id,
    });
    expect(all.body.resources[0]).toMatchObject({ name: 'second', latency: 0.5, thread_id: null, revision_id: null });

    const second = await api.http.get(`/v2/deployments/${d.id}/traces?limit=1&offset=1`);
    expect(second.body).toEqual({ resources: [all.body.resources[1]], offset: 2 });
    expect((await api.http.get(`/v2/deployments/${d.id}/traces?limit=0`)).status).toBe(422);
  });

  it("answers 404 to another workspace's key, and for an unknown deployment", async () => {
    const d = await deployment();
    await sendTrace(langsmithClient(api.baseUrl, api.adminKey), d.name);
    const other = await new TenancyRepository(api.dataSource.manager).createWorkspace(
      api.organizationId,
      'traces-other',
    );
    const otherKey = await api.mintKey({ workspaceId: other.id, role: 'admin' });
    const res = await api.http.get(`/v2/deployments/${d.id}/traces`, { key: otherKey });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Deployment ID ${d.id} not found.` });
    expect((await api.http.get(`/v2/deployments/${crypto.randomUUID()}/traces`)).status).toBe(404);
  });
});

describe('GET /v2/deployments/{id}/metrics: traces per revision', () => {
  it('compares the revisions its traces name: counts, errors, latency percentiles and tokens, newest first', async () => {
    const d = await deployment();
    const client = langsmithClient(api.baseUrl, api.adminKey);
    const now = Date.now();
    await sendTrace(client, d.name, {
      start: new Date(now - 50_000),
      latencyMs: 1_000,
      metadata: { revision_id: 'rev-old' },
    });
    await sendTrace(client, d.name, {
      start: new Date(now - 40_000),
      latencyMs: 3_000,
      metadata: { revision_id: 'rev-old' },
    });
    await sendTrace(client, d.name, {
      start: new Date(now - 20_000),
      latencyMs: 500,
      metadata: { revision_id: 'rev-new' },
    });
    // A failed trace of the new revision, and one that names none.
    const failed = randomUUID();
    const at = new Date(now - 10_000);
    const batch = await api.http.post('/api/v1/runs/batch', {
      post: [
        {
          id: failed,
          trace_id: failed,
          dotted_order: dottedSegment(at, failed),
          name: 'agent',
          run_type: 'chain',
          start_time: at.toISOString(),
          end_time: new Date(now - 9_000).toISOString(),
          error: 'boom',
          session_name: d.name,
          extra: { metadata: { revision_id: 'rev-new' } },
        },
      ],
    });
    expect(batch.status).toBe(202);
    await sendTrace(client, d.name, { start: new Date(now - 5_000), latencyMs: 100 });
    // An old trace, outside the hour.
    await sendTrace(client, d.name, {
      start: new Date(now - 2 * 3_600_000),
      latencyMs: 100,
      metadata: { revision_id: 'rev-ancient' },
    });

    const res = await api.http.get(`/v2/deployments/${d.id}/metrics?window=1h`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.traces_by_revision).toEqual([
      {
        revision_id: null,
        traces: 1,
        errors: 0,
        latency_p50_ms: 100,
        latency_p95_ms: 100,
        prompt_tokens: 7,
        completion_tokens: 3,
        total_tokens: 10,
        last_trace_at: new Date(now - 5_000).toISOString(),
      },
      {
        revision_id: 'rev-new',
        traces: 2,
        errors: 1,
        latency_p50_ms: 750,
        latency_p95_ms: 975,
        prompt_tokens: 7,
        completion_tokens: 3,
        total_tokens: 10,
        last_trace_at: at.toISOString(),
      },
      {
        revision_id: 'rev-old',
        traces: 2,
        errors: 0,
        latency_p50_ms: 2_000,
        latency_p95_ms: 2_900,
        prompt_tokens: 14,
        completion_tokens: 6,
        total_tokens: 20,
        last_trace_at: new Date(now - 40_000).toISOString(),
      },
    ]);
    const day = await api.http.get(`/v2/deployments/${d.id}/metrics?window=24h`);
    expect(day.body.traces_by_revision.map((r: { revision_id: string | null }) => r.revision_id)).toEqual([
      null,
      'rev-new',
      'rev-old',
      'rev-ancient',
    ]);
  });

  it('puts the last hour of each revision on /metrics', async () => {
    const d = await deployment();
    const client = langsmithClient(api.baseUrl, api.adminKey);
    const now = Date.now();
    await sendTrace(client, d.name, {
      start: new Date(now - 30_000),
      latencyMs: 1_000,
      metadata: { revision_id: 'rev-a' },
    });
    await sendTrace(client, d.name, {
      start: new Date(now - 20_000),
      latencyMs: 3_000,
      metadata: { revision_id: 'rev-a' },
    });
    // The first scrape of this api process: it reads the rollups (later ones within 30 s reuse them).
    const text = await (await fetch(`${api.baseUrl}/metrics`)).text();
    const sample = (name: string, labels: string) => {
      const line = text
        .split('\n')
        .find((l) => l.startsWith(`${name}{`) && l.includes(`deployment="${d.id}"`) && l.includes(labels));
      return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
    };
    expect(sample('slipway_deployment_traces', 'status="ok"')).toBe(2);
    expect(sample('slipway_deployment_traces', 'status="error"')).toBe(0);
    expect(sample('slipway_deployment_trace_latency_seconds', 'quantile="0.5"')).toBe(2);
    expect(sample('slipway_deployment_trace_latency_seconds', 'quantile="0.95"')).toBe(2.9);
    expect(sample('slipway_deployment_trace_tokens', 'kind="prompt"')).toBe(14);
    expect(sample('slipway_deployment_trace_tokens', 'kind="completion"')).toBe(6);
    expect(text).toContain(`revision="rev-a"`);
  });
});

describe('a trace is activity of its deployment', () => {
  it('an UNUSED deployment goes READY when a trace is written to its project', async () => {
    const d = await deployment();
    await api.dataSource.query(
      `UPDATE deployments SET status = 'UNUSED', last_activity_at = now() - interval '60 days' WHERE id = $1`,
      [d.id],
    );
    const elsewhere = await deployment();
    await api.dataSource.query(
      `UPDATE deployments SET status = 'UNUSED', last_activity_at = now() - interval '60 days' WHERE id = $1`,
      [elsewhere.id],
    );

    await sendTrace(langsmithClient(api.baseUrl, api.adminKey), d.name);

    expect(await status(d.id)).toBe('READY');
    const [{ idle }] = await api.dataSource.query(
      `SELECT extract(epoch FROM now() - last_activity_at)::float AS idle FROM deployments WHERE id = $1`,
      [d.id],
    );
    expect(idle).toBeLessThan(60);
    const events = await api.dataSource.query(
      `SELECT data FROM events WHERE deployment_id = $1 AND type = 'deployment.status_changed' ORDER BY uid`,
      [d.id],
    );
    expect(events.at(-1).data).toEqual({ from: 'UNUSED', to: 'READY' });
    // A deployment whose project got nothing stays as it was.
    expect(await status(elsewhere.id)).toBe('UNUSED');
  });
});
