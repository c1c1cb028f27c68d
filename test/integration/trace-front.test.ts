import { randomUUID } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'langsmith';
import { ingestCredential } from '@slipway/crypto';
import { secretsCodec } from '@slipway/crypto';
import { deploymentDatabaseName } from '@slipway/domain';
import { createLogger } from '@slipway/logging';
import {
  DeploymentDataAccess,
  TRACE_FRONT_MAX_IN_FLIGHT,
} from '../../services/deployer/src/provisioning/deployment-data-access.js';
import { TRACE_FRONT_MAX_CONNECTIONS } from '../../services/deployer/src/provisioning/trace-front.js';
import { eventually } from '../support/service-process.js';
import { dropDeploymentStores } from '../support/deployment-stores.js';
import { dottedSegment, langsmithClient, sendTrace } from '../support/langsmith.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Issue 34, zero-configuration tracing: each deployment's trace front (the LANGSMITH_ENDPOINT its
 * instances get), driven by the official `langsmith` client, unchanged, with the deployment's
 * trace-ingest credential. Real Postgres and the deployer's own DeploymentDataAccess; unsandboxed,
 * so the fronts listen on loopback (the sandbox e2e covers the services address).
 */
let api: TestApi;
let access: DeploymentDataAccess;
const made: Array<{ id: string; database: string }> = [];

interface Traced {
  id: string;
  name: string;
  projectId: string;
  endpoint: string;
  apiKey: string;
}

async function deployment(name: string): Promise<Traced> {
  const res = await api.http.post('/v2/deployments', {
    name,
    source: 'internal_source',
    source_config: { deployment_type: 'dev' },
    source_revision_config: {},
  });
  expect(res.status, res.text).toBe(201);
  const d = { id: res.body.id as string, database: deploymentDatabaseName(name, res.body.id) };
  made.push(d);
  const { tracing } = await access.environment(d.id, d.database);
  return { id: d.id, name, projectId: res.body.tracer_session_id, ...tracing };
}

/** Runs of a project, as a workspace key reads them through the api. */
async function runsOf(
  projectId: string,
): Promise<Array<{ id: string; name: string; session_id: string; trace_id: string; parent_run_id: string | null }>> {
  const res = await api.http.post('/api/v1/runs/query', { session: [projectId], limit: 100 });
  expect(res.status, res.text).toBe(200);
  return res.body.runs;
}

const post = (url: string, key: string | null, body: unknown, path = '/runs/batch') =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'x-api-key': key } : {}) },
    body: JSON.stringify(body),
  });

/** One run create (a root chain) as `/runs/batch` takes it. */
function runCreate(project: string, id = randomUUID(), start = new Date(Date.now() - 2_000)) {
  return {
    id,
    trace_id: id,
    dotted_order: dottedSegment(start, id),
    name: 'root',
    run_type: 'chain',
    start_time: start.toISOString(),
    session_name: project,
    inputs: { q: 1 },
  };
}

let alpha: Traced;
let beta: Traced;

beforeAll(async () => {
  api = await startTestApi({ SLIPWAY_RATE_LIMIT_PER_KEY: '100000' });
  access = new DeploymentDataAccess(
    api.config,
    api.dataSource,
    secretsCodec(api.config),
    createLogger({ name: 'trace-front', level: 'silent' }),
  );
  await access.start();
  alpha = await deployment('front-alpha');
  beta = await deployment('front-beta');
}, 60_000);

afterAll(async () => {
  await access?.close();
  if (api) await dropDeploymentStores(api.config, made);
  await api?.close();
});

describe("a deployment's trace front", () => {
  it("is an /api/v1 endpoint with its own port, and the credential is the deployment's", async () => {
    expect(alpha.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
    expect(alpha.endpoint).not.toBe(beta.endpoint);
    expect(alpha.apiKey).toBe(ingestCredential(api.config.secretsKey.key, alpha.id));
    const info = await fetch(`${alpha.endpoint}/info`);
    expect(info.status).toBe(200);
    expect(
      ((await info.json()) as { batch_ingest_config: { use_multipart_endpoint: boolean } }).batch_ingest_config
        .use_multipart_endpoint,
    ).toBe(true);
    // Recorded, so instances adopted after a restart find it where it was.
    const again = await access.environment(alpha.id, made[0]!.database);
    expect(again.tracing.endpoint).toBe(alpha.endpoint);
  });

  it("writes the langsmith client's runs (multipart, gzip) into the deployment's project, whatever project they name", async () => {
    const client = new Client({ apiUrl: alpha.endpoint, apiKey: alpha.apiKey, autoBatchTracing: true });
    const { traceId, childId } = await sendTrace(client, 'some-other-project', { metadata: { thread_id: 'th-1' } });
    const runs = await runsOf(alpha.projectId);
    expect(runs.map((r) => r.id).sort()).toEqual([traceId, childId].sort());
    expect(runs.every((r) => r.session_id === alpha.projectId)).toBe(true);
    const named = await api.http.get('/api/v1/sessions?name=some-other-project');
    expect(named.body).toEqual([]);
  });

  it('takes /runs/batch, /runs, PATCH /runs/{id} and OTLP traces', async () => {
    const run = runCreate('x');
    expect((await post(beta.endpoint, beta.apiKey, { post: [run] })).status).toBe(202);
    const single = runCreate('x');
    expect((await post(beta.endpoint, beta.apiKey, single, '/runs')).status).toBe(202);
    const patched = await fetch(`${beta.endpoint}/runs/${single.id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', 'x-api-key': beta.apiKey },
      body: JSON.stringify({
        trace_id: single.id,
        dotted_order: single.dotted_order,
        end_time: new Date().toISOString(),
        outputs: { a: 1 },
      }),
    });
    expect(patched.status).toBe(202);
    const span = randomUUID().replaceAll('-', '');
    const nowNs = BigInt(Date.now()) * 1_000_000n;
    const otlp = await fetch(`${beta.endpoint}/otel/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': beta.apiKey, 'langsmith-project': 'elsewhere' },
      body: JSON.stringify({
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [
                  {
                    traceId: span,
                    spanId: span.slice(0, 16),
                    name: 'otel-span',
                    startTimeUnixNano: String(nowNs - 1_000_000n),
                    endTimeUnixNano: String(nowNs),
                  },
                ],
              },
            ],
          },
        ],
      }),
    });
    expect(otlp.status, await otlp.clone().text()).toBe(200);
    expect(await otlp.json()).toEqual({ partialSuccess: {} });
    const runs = await runsOf(beta.projectId);
    expect(runs.map((r) => r.name).sort()).toEqual(['otel-span', 'root', 'root']);
    expect((await api.http.get(`/api/v1/runs/${single.id}`)).body.outputs).toEqual({ a: 1 });
  });

  it("refuses another deployment's credential, an API key and no key, writing nothing", async () => {
    const run = runCreate('x');
    for (const key of [beta.apiKey, api.adminKey, null, `${alpha.apiKey}x`]) {
      const res = await post(alpha.endpoint, key, { post: [run] });
      expect(res.status, String(key)).toBe(401);
      expect(((await res.json()) as { detail: string }).detail).toMatch(/trace-ingest key/);
    }
    expect((await api.http.get(`/api/v1/runs/${run.id}`)).status).toBe(404);
  });

  it("opens nothing else: at the api, only ingest into its own project (what a listener's pods use); reads and /v2 refuse it", async () => {
    const asKey = { 'x-api-key': alpha.apiKey };
    const batch = (key: string, body: unknown) =>
      fetch(`${api.baseUrl}/api/v1/runs/batch`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    // At the api's ingest it writes into its deployment's project, whatever project the run names.
    const run = runCreate(beta.name);
    expect((await batch(alpha.apiKey, { post: [run] })).status).toBe(202);
    expect((await api.http.get(`/api/v1/runs/${run.id}`)).body.session_id).toBe(alpha.projectId);
    // A credential naming another deployment with this one's MAC, or a cut one: 401, nothing written.
    const forged = alpha.apiKey.replace(alpha.id.replaceAll('-', ''), beta.id.replaceAll('-', ''));
    for (const key of [forged, alpha.apiKey.slice(0, -3)]) {
      const other = runCreate(beta.name);
      expect((await batch(key, { post: [other] })).status).toBe(401);
      expect((await api.http.get(`/api/v1/runs/${other.id}`)).status).toBe(404);
    }
    // Every other door refuses it.
    expect((await fetch(`${api.baseUrl}/api/v1/sessions`, { headers: asKey })).status).toBe(401);
    expect((await fetch(`${api.baseUrl}/api/v1/runs/${run.id}`, { headers: asKey })).status).toBe(401);
    expect(
      (
        await fetch(`${api.baseUrl}/api/v1/runs/query`, {
          method: 'POST',
          headers: { ...asKey, 'content-type': 'application/json' },
          body: '{}',
        })
      ).status,
    ).toBe(401);
    expect(
      (
        await fetch(`${api.baseUrl}/api/v2/runs/query`, {
          method: 'POST',
          headers: { ...asKey, 'content-type': 'application/json' },
          body: JSON.stringify({ project_ids: [alpha.projectId] }),
        })
      ).status,
    ).toBe(401);
    expect(
      (await fetch(`${api.baseUrl}/api/v2/runs/${run.id}?project_id=${alpha.projectId}`, { headers: asKey })).status,
    ).toBe(401);
    expect((await fetch(`${api.baseUrl}/v2/deployments`, { headers: asKey })).status).toBe(401);
    for (const [method, path] of [
      ['GET', '/sessions'],
      ['POST', '/runs/query'],
      ['GET', `/runs/${randomUUID()}`],
      ['GET', '/'],
      ['POST', '/datasets'],
    ]) {
      const res = await fetch(`${alpha.endpoint}${path}`, {
        method,
        headers: { ...asKey, 'content-type': 'application/json' },
        ...(method === 'POST' ? { body: '{}' } : {}),
      });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    expect((await fetch(alpha.endpoint.replace('/api/v1', '/v2/deployments'), { headers: asKey })).status).toBe(404);
  });

  it("cannot touch another project's runs or traces, even knowing their ids; nothing is half-written", async () => {
    // A run of beta's project, written with a workspace key.
    const theirs = runCreate(beta.name);
    const ws = langsmithClient(api.baseUrl, api.adminKey);
    await ws.createRun({ ...theirs, project_name: beta.name, start_time: Date.parse(theirs.start_time) });
    await ws.flush();
    expect((await api.http.get(`/api/v1/runs/${theirs.id}`)).body.session_id).toBe(beta.projectId);

    const mine = runCreate('x');
    const overwrite = await post(alpha.endpoint, alpha.apiKey, {
      post: [mine, { ...theirs, inputs: { hijacked: true } }],
    });
    expect(overwrite.status).toBe(409);
    const update = await post(alpha.endpoint, alpha.apiKey, {
      patch: [{ id: theirs.id, trace_id: theirs.id, dotted_order: theirs.dotted_order, error: 'injected' }],
    });
    expect(update.status).toBe(409);
    // A child grafted into their trace.
    const child = randomUUID();
    const graft = await post(alpha.endpoint, alpha.apiKey, {
      post: [
        {
          ...runCreate('x', child),
          trace_id: theirs.id,
          parent_run_id: theirs.id,
          dotted_order: `${theirs.dotted_order}.${dottedSegment(new Date(), child)}`,
        },
      ],
    });
    expect(graft.status).toBe(409);
    const stored = (await api.http.get(`/api/v1/runs/${theirs.id}`)).body;
    expect(stored).toMatchObject({ session_id: beta.projectId, inputs: { q: 1 }, error: null, child_run_ids: [] });
    expect((await api.http.get(`/api/v1/runs/${mine.id}`)).status).toBe(404);
    expect((await api.http.get(`/api/v1/runs/${child}`)).status).toBe(404);

    // An update held before its create is folded only into a run of the project it was sent for.
    const early = runCreate(beta.name);
    expect(
      (
        await post(alpha.endpoint, alpha.apiKey, {
          patch: [{ id: early.id, trace_id: early.id, dotted_order: early.dotted_order, outputs: { from: 'alpha' } }],
        })
      ).status,
    ).toBe(202);
    await ws.createRun({ ...early, project_name: beta.name, start_time: Date.parse(early.start_time) });
    await ws.flush();
    expect((await api.http.get(`/api/v1/runs/${early.id}`)).body).toMatchObject({
      session_id: beta.projectId,
      outputs: null,
    });
  });

  it('holds at most a bounded number of connections per deployment, closing the rest on arrival', async () => {
    const { port, hostname } = new URL(alpha.endpoint);
    const open: Socket[] = [];
    let closed = 0;
    try {
      for (let i = 0; i < TRACE_FRONT_MAX_CONNECTIONS + 10; i++) {
        const socket = connect(Number(port), hostname);
        socket.on('error', () => undefined);
        socket.once('close', () => closed++);
        await new Promise((resolve) => socket.once('connect', resolve));
        open.push(socket);
      }
      // The server closes those past the bound as it accepts them; the others stay open.
      // (Connections this process's fetch keeps alive to the front count too: at least 10 are refused.)
      await eventually(
        () => closed,
        (n) => n >= 10,
        5_000,
        50,
      );
      await new Promise((r) => setTimeout(r, 200));
      expect(open.length - closed).toBeLessThanOrEqual(TRACE_FRONT_MAX_CONNECTIONS);
      expect(open.length - closed).toBeGreaterThan(TRACE_FRONT_MAX_CONNECTIONS - 5);
      // Another deployment's front is not affected.
      expect((await fetch(`${beta.endpoint}/info`)).status).toBe(200);
    } finally {
      for (const s of open) s.destroy();
    }
    // Once they are gone, its own instances get in again.
    await eventually(
      async () => (await fetch(`${alpha.endpoint}/info`).catch(() => null))?.status,
      (s) => s === 200,
      5_000,
      100,
    );
  });

  it("throttles one deployment's flood with 429 and Retry-After while another's ingest goes through", async () => {
    const batch = () => ({ post: Array.from({ length: 50 }, () => runCreate('x')) });
    const flood = Array.from({ length: TRACE_FRONT_MAX_IN_FLIGHT * 6 }, () =>
      post(alpha.endpoint, alpha.apiKey, batch()),
    );
    const other = post(beta.endpoint, beta.apiKey, batch());
    const answers = await Promise.all(flood);
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 202 || s === 429)).toBe(true);
    expect(answers.find((r) => r.status === 429)!.headers.get('retry-after')).toBe('1');
    expect((await other).status).toBe(202);
  });
});
