import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentConfig } from '@slipway/config';
import { ControlPlaneClient } from '../../services/listener-agent/src/control-plane.client.js';
import { transitionDeployment } from '@slipway/db';
import { HttpClient, type HttpResponse, type RequestOptions } from '../support/http.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The listener agent protocol (docs/api.md, Listener agent protocol) against the real api, Postgres and Redis. No
 * deployer runs here, so each test moves a revision to DEPLOYING exactly as the deployer will
 * once the rollout job is in Redis: through RevisionFlow.transition.
 */

const SECRET = 'sk-agent-first-secret-6d1f0b';
const NEW_SECRET = 'sk-agent-second-secret-93ac2e';
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const AGENT_ONLY = { detail: "Only a listener agent's API key can call this endpoint." };
const OTHER_LISTENER = { detail: 'This API key belongs to another listener.' };

/** Every response body except desired-state's, to prove secret values appear nowhere else. */
const otherResponses: string[] = [];

/** A client that keeps what it was answered. */
class RecordingClient extends HttpClient {
  override async request<T = any>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<HttpResponse<T>> {
    const res = await super.request<T>(method, path, options);
    if (!path.endsWith('/desired-state')) otherResponses.push(res.text);
    return res;
  }
}

let api: TestApi;
let admin: RecordingClient;
let member: RecordingClient;
/** Listener A and its agent; listener B and its agent. */
let listenerA: string;
let listenerB: string;
let agentA: RecordingClient;
let agentB: RecordingClient;

beforeAll(async () => {
  api = await startTestApi();
  admin = new RecordingClient(api.baseUrl, api.adminKey);
  member = new RecordingClient(api.baseUrl, await api.mintKey({ role: 'member' }));
  listenerA = (await createListener('cluster-a', ['agents', 'staging'])).id;
  listenerB = (await createListener('cluster-b', null)).id;
  agentA = new RecordingClient(api.baseUrl, await api.mintKey({ listenerId: listenerA }));
  agentB = new RecordingClient(api.baseUrl, await api.mintKey({ listenerId: listenerB }));
});
afterAll(async () => {
  await api?.close();
});

// ------------------------------------------------------------------ helpers

async function createListener(computeId: string, namespaces: string[] | null) {
  const res = await admin.post('/v2/listeners', {
    compute_type: 'k8s',
    compute_id: computeId,
    compute_config: { k8s_namespaces: namespaces },
  });
  expect(res.status).toBe(201);
  return res.body;
}

async function createDeployment(
  name: string,
  listenerId: string,
  extra: { namespace?: string; secret?: string; resource_spec?: object } = {},
) {
  const res = await admin.post('/v2/deployments', {
    name,
    source: 'external_container',
    source_config: {
      listener_id: listenerId,
      ...(extra.namespace ? { listener_config: { k8s_namespace: extra.namespace } } : {}),
      ...(extra.resource_spec ? { resource_spec: extra.resource_spec } : {}),
    },
    source_revision_config: { image_uri: 'registry.example/agent:1.0.0' },
    secrets: [{ name: 'OPENAI_API_KEY', value: extra.secret ?? SECRET }],
  });
  expect(res.status).toBe(201);
  return res.body as { id: string; latest_revision_id: string; tracing_project_id: string };
}

/** The rollout job reaches Redis (→ AWAITING_DEPLOY), then the deployer publishes it (→ DEPLOYING). */
async function startRollout(revisionId: string): Promise<void> {
  await api.relay.drain();
  expect((await getRevisionRow(revisionId)).status).toBe('AWAITING_DEPLOY');
  const applied = await api.dataSource.transaction((m) => api.flow.transition(m, revisionId, 'DEPLOYING'));
  expect(applied).not.toBeNull();
}

async function getRevisionRow(id: string) {
  const [row] = await api.dataSource.query('SELECT status, status_message, heartbeat_at FROM revisions WHERE id = $1', [
    id,
  ]);
  return row as { status: string; status_message: string | null; heartbeat_at: Date | null };
}

const getDeployment = (id: string) => admin.get(`/v2/deployments/${id}`);
const getRevision = (deploymentId: string, revisionId: string) =>
  admin.get(`/v2/deployments/${deploymentId}/revisions/${revisionId}`);
const desiredState = (client: HttpClient, listenerId: string) =>
  client.get(`/v2/listeners/${listenerId}/desired-state`);
const report = (client: HttpClient, listenerId: string, body: unknown) =>
  client.post(`/v2/listeners/${listenerId}/reports`, body);
const entryOf = (res: HttpResponse, deploymentId: string) =>
  res.body.deployments.find((d: any) => d.deployment_id === deploymentId);

// ------------------------------------------------------------------ tests

describe('GET /v2/listeners/{listener_id}/desired-state', () => {
  it('shows the agent its deployment once the revision is DEPLOYING, with secret values and manifests', async () => {
    const alpha = await createDeployment('agent-alpha', listenerA, {
      namespace: 'staging',
      resource_spec: { cpu: 0.5, min_scale: 1, max_scale: 3 },
    });
    await api.relay.drain();
    // Published only once the deployer moves it to DEPLOYING: AWAITING_DEPLOY is not for the agent yet.
    expect((await desiredState(agentA, listenerA)).body.deployments).toEqual([]);

    await startRollout(alpha.latest_revision_id);
    const res = await desiredState(agentA, listenerA);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ listener_id: listenerA, generated_at: expect.stringMatching(ISO) });
    expect(res.body.deployments).toHaveLength(1);
    const entry = res.body.deployments[0];
    expect(entry).toMatchObject({
      deployment_id: alpha.id,
      name: 'agent-alpha',
      namespace: 'staging',
      revision_id: alpha.latest_revision_id,
      action: 'apply',
      image_uri: 'registry.example/agent:1.0.0',
      resource_spec: { cpu: 0.5, cpu_limit: 1, min_scale: 1, max_scale: 3 },
      secrets: [{ name: 'OPENAI_API_KEY', value: SECRET }],
    });

    const manifests: any[] = entry.manifests;
    for (const m of manifests) expect(m.metadata.namespace, `${m.kind} ${m.metadata.name}`).toBe('staging');
    const server = manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === 'agent-alpha');
    expect(server.spec.replicas).toBe(1);
    expect(server.spec.template.metadata.labels['slipway.dev/revision-id']).toBe(alpha.latest_revision_id);
    expect(server.spec.template.spec.containers[0]).toMatchObject({
      image: 'registry.example/agent:1.0.0',
      resources: { requests: { cpu: '500m' } },
    });
    expect(
      manifests.find((m) => m.kind === 'HorizontalPodAutoscaler' && m.metadata.name === 'agent-alpha').spec,
    ).toMatchObject({
      minReplicas: 1,
      maxReplicas: 3,
    });
    const env = manifests.find((m) => m.kind === 'Secret' && m.metadata.name === 'agent-alpha-env');
    expect(env.stringData.OPENAI_API_KEY).toBe(SECRET);
    expect(env.stringData.DATABASE_URI).toMatch(
      /^postgres:\/\/slipway:[^@]+@agent-alpha-db:5432\/slipway_d_agent_alpha_[0-9a-f]{8}$/,
    );
    // The value sits in the Secret only, never in a workload.
    expect(JSON.stringify(manifests.filter((m) => m.kind !== 'Secret'))).not.toContain(SECRET);
    // Tracing, as on Slipway's own runtime: its pods send to the api's /api/v1 (no trace front
    // reaches a cluster) with the deployment's trace-ingest credential, which writes only there.
    expect(env.stringData).toMatchObject({
      LANGSMITH_TRACING: 'true',
      LANGSMITH_ENDPOINT: `${api.config.publicUrl}/api/v1`,
      LANGSMITH_PROJECT: 'agent-alpha',
      LANGCHAIN_REVISION_ID: alpha.latest_revision_id,
    });
    expect(env.stringData.LANGSMITH_API_KEY).toMatch(/^slwt_/);
    const id = randomUUID();
    const at = new Date(Date.now() - 1_000).toISOString();
    const start = `${at.slice(0, 19).replace(/[-:]/g, '')}${at.slice(20, 23)}000Z${id}`;
    const sent = await fetch(`${api.baseUrl}/api/v1/runs/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': env.stringData.LANGSMITH_API_KEY },
      body: JSON.stringify({
        post: [
          {
            id,
            trace_id: id,
            dotted_order: start,
            name: 'pod-run',
            run_type: 'chain',
            start_time: at,
            session_name: 'elsewhere',
          },
        ],
      }),
    });
    expect(sent.status).toBe(202);
    expect((await api.http.get(`/api/v1/runs/${id}`)).body.session_id).toBe(alpha.tracing_project_id);
    expect(JSON.stringify(manifests.filter((m) => m.kind !== 'Secret'))).not.toContain(
      env.stringData.LANGSMITH_API_KEY,
    );

    // Another listener's agent sees none of it.
    const other = await desiredState(agentB, listenerB);
    expect(other.status).toBe(200);
    expect(other.body.deployments).toEqual([]);
    expect(other.text).not.toContain(SECRET);
  });

  it('answers an unchanged desired state with 304 when the agent names its ETag, and a changed one in full with a new ETag', async () => {
    const listener: string = (await createListener('etag-cluster', null)).id;
    const agent = admin.as(await api.mintKey({ listenerId: listener }));
    const poll = (etag?: string) =>
      agent.get(`/v2/listeners/${listener}/desired-state`, { headers: etag ? { 'if-none-match': etag } : {} });

    const empty = await poll();
    expect(empty.status).toBe(200);
    const emptyTag = empty.headers.get('etag')!;
    expect(emptyTag).toMatch(/^"[A-Za-z0-9_-]{32}"$/);
    const unchanged = await poll(emptyTag);
    expect(unchanged.status).toBe(304);
    expect(unchanged.text).toBe('');
    expect(unchanged.headers.get('etag')).toBe(emptyTag);
    // A 304 is still a check-in.
    const [{ last_seen_at: seen }] = await api.dataSource.query('SELECT last_seen_at FROM listeners WHERE id = $1', [
      listener,
    ]);
    expect(seen).not.toBeNull();

    const d = await createDeployment('etag-alpha', listener);
    await startRollout(d.latest_revision_id);
    const changed = await poll(emptyTag);
    expect(changed.status).toBe(200);
    expect(changed.body.deployments.map((e: any) => e.deployment_id)).toEqual([d.id]);
    const tag = changed.headers.get('etag')!;
    expect(tag).not.toBe(emptyTag);
    expect((await poll(`W/${tag}`)).status).toBe(304);
    // The ETag is a keyed digest: the secret values it covers do not show in it.
    expect(tag).not.toContain(SECRET);

    // A change to what the entry renders from (a new secret value rolled out) changes it.
    const patched = await admin.patch(`/v2/deployments/${d.id}`, {
      secrets: [{ name: 'OPENAI_API_KEY', value: NEW_SECRET }],
    });
    expect(patched.status).toBe(200);
    // The first rollout finishes, so the new revision (queued behind it) starts.
    expect(
      await api.dataSource.transaction((m) => api.flow.transition(m, d.latest_revision_id, 'DEPLOYED')),
    ).not.toBeNull();
    await startRollout(patched.body.latest_revision_id);
    const rolled = await poll(tag);
    expect(rolled.status).toBe(200);
    expect(entryOf(rolled, d.id).secrets).toEqual([{ name: 'OPENAI_API_KEY', value: NEW_SECRET }]);
    expect(rolled.headers.get('etag')).not.toBe(tag);

    // The agent's client sends its ETag back and keeps what it has on a 304 (the same object,
    // not a parse of a new body), and takes a changed state in full.
    const client = new ControlPlaneClient({
      apiUrl: api.baseUrl,
      listenerId: listener,
      apiKey: await api.mintKey({ listenerId: listener }),
      requestTimeoutMs: 10_000,
    } as AgentConfig);
    const first = await client.desiredState();
    expect(first.deployments.map((e) => e.deployment_id)).toEqual([d.id]);
    expect(await client.desiredState()).toBe(first);
    const other = await createDeployment('etag-beta', listener);
    await startRollout(other.latest_revision_id);
    expect((await client.desiredState()).deployments.map((e) => e.deployment_id).sort()).toEqual(
      [d.id, other.id].sort(),
    );
  });

  it(
    'gives a deployment without stored credentials (made before they were stored) its passwords on first poll, ' +
      'the same on every poll after',
    async () => {
      const listener: string = (await createListener('credentials-cluster', null)).id;
      const agent = admin.as(await api.mintKey({ listenerId: listener }));
      const d = await createDeployment('credentials-alpha', listener);
      await startRollout(d.latest_revision_id);
      await api.dataSource.query('DELETE FROM deployment_credentials WHERE deployment_id = $1', [d.id]);
      const databaseUri = async () => {
        const res = await desiredState(agent, listener);
        expect(res.status).toBe(200);
        return entryOf(res, d.id).manifests.find(
          (m: any) => m.kind === 'Secret' && m.metadata.name === 'credentials-alpha-env',
        ).stringData.DATABASE_URI;
      };

      const first = await databaseUri();
      expect(first).toMatch(/^postgres:\/\/slipway:[A-Za-z0-9_-]{43}@credentials-alpha-db:5432\//);
      const stored = await api.dataSource.query('SELECT 1 FROM deployment_credentials WHERE deployment_id = $1', [
        d.id,
      ]);
      expect(stored).toHaveLength(1);
      // Rendered again from the stored (sealed) row now: the same password.
      expect(await databaseUri()).toBe(first);
    },
  );

  it('never follows a redirect: a 3xx is an error, and the key never reaches where it points', async () => {
    // Two servers on this machine: a front that redirects every call, and the place it points to.
    const landed: Array<{ url: string; key: string | undefined }> = [];
    const target = createServer((req, res) => {
      landed.push({ url: req.url!, key: req.headers['x-api-key'] as string | undefined });
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end('{"listener_id":"x","generated_at":"x","deployments":[]}');
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
    const seenByFront: string[] = [];
    const front = createServer((req, res) => {
      seenByFront.push(`${req.method} ${req.url}`);
      const status = req.method === 'POST' ? 307 : 302;
      res.writeHead(status, { location: `${targetUrl}${req.url}` }).end();
    });
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
    try {
      const client = new ControlPlaneClient({
        apiUrl: `http://127.0.0.1:${(front.address() as AddressInfo).port}`,
        listenerId: listenerA,
        apiKey: 'slw_agent_key_that_must_not_travel',
        requestTimeoutMs: 5_000,
      } as AgentConfig);
      await expect(client.desiredState()).rejects.toThrow(/HTTP 302 redirect refused/);
      await expect(client.report({ revisions: [], deleted_deployments: [], logs: [] })).rejects.toThrow(
        /HTTP 307 redirect refused/,
      );
      expect(seenByFront).toEqual([
        `GET /v2/listeners/${listenerA}/desired-state`,
        `POST /v2/listeners/${listenerA}/reports`,
      ]);
      expect(landed).toEqual([]);
    } finally {
      await new Promise((r) => front.close(r));
      await new Promise((r) => target.close(r));
    }
  });

  it("answers only the listener's own agent key", async () => {
    for (const path of [`/v2/listeners/${listenerA}/desired-state`, `/v2/listeners/${listenerA}/reports`]) {
      const call = (client: HttpClient, options?: RequestOptions) =>
        path.endsWith('/reports') ? client.post(path, {}, options) : client.get(path, options);
      expect(await call(admin).then((r) => [r.status, r.body]), `admin ${path}`).toEqual([403, AGENT_ONLY]);
      expect(await call(member).then((r) => [r.status, r.body]), `member ${path}`).toEqual([403, AGENT_ONLY]);
      expect(await call(agentB).then((r) => [r.status, r.body]), `other agent ${path}`).toEqual([403, OTHER_LISTENER]);
      expect((await call(agentA, { key: null })).status, `no key ${path}`).toBe(401);
    }
    // And the agent key is good for nothing else.
    expect((await agentA.get('/v2/deployments')).status).toBe(403);
    expect((await agentA.get(`/v2/listeners/${listenerA}`)).status).toBe(403);
    // Path ids are validated like everywhere else.
    const bad = await agentA.get('/v2/listeners/not-a-uuid/desired-state');
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['path', 'listener_id'], type: 'uuid_parsing' });
  });

  it("records last_seen_at on every call, and not on another listener's refused one", async () => {
    const quiet = await createListener('cluster-quiet', null);
    const agent = new RecordingClient(api.baseUrl, await api.mintKey({ listenerId: quiet.id }));
    expect(quiet.last_seen_at).toBeNull();
    expect((await report(agentA, quiet.id, {})).status).toBe(403);
    expect((await admin.get(`/v2/listeners/${quiet.id}`)).body.last_seen_at).toBeNull();

    const res = await report(agent, quiet.id, {});
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ applied: [], deleted: [], rejected: [] });
    expect((await admin.get(`/v2/listeners/${quiet.id}`)).body.last_seen_at).toMatch(ISO);

    await api.dataSource.query('UPDATE listeners SET last_seen_at = NULL WHERE id = $1', [quiet.id]);
    expect((await desiredState(agent, quiet.id)).status).toBe(200);
    expect((await admin.get(`/v2/listeners/${quiet.id}`)).body.last_seen_at).toMatch(ISO);
  });
});

describe('POST /v2/listeners/{listener_id}/reports', () => {
  let alpha: { id: string; latest_revision_id: string; tracing_project_id: string };
  let firstRevision: string;

  it('DEPLOYED activates the revision; the same report again is rejected (terminal)', async () => {
    alpha = (await getDeployment((await admin.get('/v2/deployments?name=agent-alpha')).body.resources[0].id)).body;
    firstRevision = alpha.latest_revision_id;
    const res = await report(agentA, listenerA, {
      revisions: [{ revision_id: firstRevision, status: 'DEPLOYED', message: 'rolled out' }],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ applied: [firstRevision], deleted: [], rejected: [] });
    expect((await getRevision(alpha.id, firstRevision)).body).toMatchObject({
      status: 'DEPLOYED',
      status_message: 'Listener reported: rolled out',
    });
    expect((await getDeployment(alpha.id)).body.active_revision_id).toBe(firstRevision);
    expect(entryOf(await desiredState(agentA, listenerA), alpha.id)).toBeUndefined();

    const again = await report(agentA, listenerA, { revisions: [{ revision_id: firstRevision, status: 'DEPLOYED' }] });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({
      applied: [],
      deleted: [],
      rejected: [
        { revision_id: firstRevision, reason: `Revision ID ${firstRevision} is DEPLOYED; it cannot move to DEPLOYED.` },
      ],
    });
    expect((await getRevision(alpha.id, firstRevision)).body.status_message).toBe('Listener reported: rolled out');
  });

  it("rejects reports about revisions that are not its listener's, and changes nothing", async () => {
    const bravo = await createDeployment('agent-bravo', listenerB);
    await startRollout(bravo.latest_revision_id);
    const unknown = randomUUID();
    const res = await report(agentA, listenerA, {
      revisions: [
        { revision_id: bravo.latest_revision_id, status: 'DEPLOYED' },
        { revision_id: unknown, status: 'DEPLOY_FAILED', message: 'x' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      applied: [],
      deleted: [],
      rejected: [
        {
          revision_id: bravo.latest_revision_id,
          reason: `Revision ID ${bravo.latest_revision_id} is not a revision of a deployment of listener ID ${listenerA}.`,
        },
        {
          revision_id: unknown,
          reason: `Revision ID ${unknown} is not a revision of a deployment of listener ID ${listenerA}.`,
        },
      ],
    });
    expect((await getRevisionRow(bravo.latest_revision_id)).status).toBe('DEPLOYING');
    expect((await getDeployment(bravo.id)).body.active_revision_id).toBeNull();
    // Its own agent still sees it to apply.
    expect(entryOf(await desiredState(agentB, listenerB), bravo.id)).toMatchObject({
      action: 'apply',
      namespace: 'default',
    });
  });

  it("stores shipped pod log lines as the revision's deploy logs, secret values redacted, and only for its own revisions", async () => {
    const res = await report(agentA, listenerA, {
      logs: [
        { revision_id: firstRevision, message: 'starting registry.example/agent:1.0.0' },
        { revision_id: firstRevision, level: 'error', message: `loaded setting OPENAI_API_KEY=${SECRET}` },
        { revision_id: randomUUID(), message: 'not mine' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body.rejected).toHaveLength(1);
    const logs = await admin.get(`/v2/deployments/${alpha.id}/revisions/${firstRevision}/logs?type=deploy`);
    expect(logs.status).toBe(200);
    const lines = (logs.body.logs ?? logs.body).map((l: any) => [l.level, l.message]);
    expect(lines).toEqual(
      expect.arrayContaining([
        ['info', 'starting registry.example/agent:1.0.0'],
        ['error', 'loaded setting OPENAI_API_KEY=********'],
      ]),
    );
    expect(JSON.stringify(logs.body)).not.toContain(SECRET);

    const bad = await report(agentA, listenerA, {
      logs: [{ revision_id: firstRevision, level: 'loud', message: 'x' }],
    });
    expect(bad.status).toBe(422);
  });

  it('DEPLOY_FAILED records the message (secret values redacted) and keeps the previous revision serving', async () => {
    const patched = await admin.patch(`/v2/deployments/${alpha.id}`, {
      secrets: [{ name: 'OPENAI_API_KEY', value: NEW_SECRET }],
    });
    expect(patched.status).toBe(200);
    const second = patched.body.latest_revision_id;
    expect(second).not.toBe(firstRevision);
    await startRollout(second);

    const published = entryOf(await desiredState(agentA, listenerA), alpha.id);
    expect(published).toMatchObject({
      action: 'apply',
      revision_id: second,
      secrets: [{ name: 'OPENAI_API_KEY', value: NEW_SECRET }],
    });

    const res = await report(agentA, listenerA, {
      revisions: [{ revision_id: second, status: 'DEPLOY_FAILED', message: `CrashLoopBackOff: bad key ${NEW_SECRET}` }],
    });
    expect(res.body).toEqual({ applied: [second], deleted: [], rejected: [] });
    const revision = await getRevision(alpha.id, second);
    expect(revision.body).toMatchObject({
      status: 'DEPLOY_FAILED',
      status_message: 'Listener reported: CrashLoopBackOff: bad key ********',
    });
    expect(revision.text).not.toContain(NEW_SECRET);
    expect((await getDeployment(alpha.id)).body).toMatchObject({
      active_revision_id: firstRevision,
      latest_revision_id: second,
    });
  });

  it('DEPLOYING while deploying is a heartbeat; a revision queued behind the rollout starts when the agent reports it done', async () => {
    const charlie = await createDeployment('agent-charlie', listenerA);
    const first = charlie.latest_revision_id;
    await startRollout(first);

    const beat = await report(agentA, listenerA, {
      revisions: [{ revision_id: first, status: 'DEPLOYING', message: 'pulling image' }],
    });
    expect(beat.body).toEqual({ applied: [first], deleted: [], rejected: [] });
    expect(await getRevisionRow(first)).toMatchObject({ status: 'DEPLOYING', heartbeat_at: expect.any(Date) });

    const patched = await admin.patch(`/v2/deployments/${charlie.id}`, {
      source_revision_config: { image_uri: 'registry.example/agent:2.0.0' },
    });
    const queued = patched.body.latest_revision_id;
    expect((await getRevisionRow(queued)).status).toBe('QUEUED');
    // The agent keeps seeing the revision in flight, not the queued one.
    expect(entryOf(await desiredState(agentA, listenerA), charlie.id)).toMatchObject({
      revision_id: first,
      namespace: 'agents',
    });

    const done = await report(agentA, listenerA, { revisions: [{ revision_id: first, status: 'DEPLOYED' }] });
    expect(done.body.applied).toEqual([first]);
    await api.relay.drain();
    expect((await getRevisionRow(queued)).status).toBe('AWAITING_DEPLOY');
    expect((await getDeployment(charlie.id)).body.active_revision_id).toBe(first);
  });

  it('DELETE publishes a delete without secret values; the deleted report removes the deployment but not its tracing project', async () => {
    expect((await admin.delete(`/v2/deployments/${alpha.id}`)).status).toBe(204);
    const res = await desiredState(agentA, listenerA);
    const entry = entryOf(res, alpha.id);
    expect(entry).toMatchObject({
      action: 'delete',
      name: 'agent-alpha',
      namespace: 'staging',
      revision_id: firstRevision,
      image_uri: 'registry.example/agent:1.0.0',
      secrets: [],
    });
    expect(entry.manifests.map((m: any) => `${m.kind}/${m.metadata.name}`)).toEqual(
      expect.arrayContaining(['Deployment/agent-alpha', 'Secret/agent-alpha-env', 'StatefulSet/agent-alpha-db']),
    );
    for (const secret of entry.manifests.filter((m: any) => m.kind === 'Secret')) {
      expect(secret.stringData).toBeUndefined();
      expect(secret.data).toBeUndefined();
    }
    expect(JSON.stringify(entry)).not.toContain(SECRET);
    expect(JSON.stringify(entry)).not.toContain(NEW_SECRET);

    const charlie = (await admin.get('/v2/deployments?name=agent-charlie')).body.resources[0];
    const bravo = (await admin.get('/v2/deployments?name=agent-bravo')).body.resources[0];
    const teardown = await report(agentA, listenerA, { deleted_deployments: [alpha.id, charlie.id, bravo.id] });
    expect(teardown.status).toBe(200);
    expect(teardown.body).toEqual({
      applied: [],
      deleted: [alpha.id],
      rejected: [
        {
          deployment_id: charlie.id,
          reason:
            `Deployment ID ${charlie.id} is AWAITING_DATABASE; ` +
            `only a deployment being deleted (AWAITING_DELETE) can finish its teardown.`,
        },
        {
          deployment_id: bravo.id,
          reason: `Deployment ID ${bravo.id} is not a deployment of listener ID ${listenerA}.`,
        },
      ],
    });
    expect((await getDeployment(alpha.id)).status).toBe(404);
    expect(
      await api.dataSource.query('SELECT count(*)::int AS n FROM revisions WHERE deployment_id = $1', [alpha.id]),
    ).toEqual([{ n: 0 }]);
    const [project] = await api.dataSource.query('SELECT name, deployment_id FROM tracing_projects WHERE id = $1', [
      alpha.tracing_project_id,
    ]);
    expect(project).toEqual({ name: 'agent-alpha', deployment_id: null });
    expect((await getDeployment(charlie.id)).status).toBe(200);
    expect((await getDeployment(bravo.id)).status).toBe(200);
    expect(entryOf(await desiredState(agentA, listenerA), alpha.id)).toBeUndefined();
  });

  it('a deployment deleted before it ever served publishes a delete with no manifests', async () => {
    const delta = await createDeployment('agent-delta', listenerA);
    await startRollout(delta.latest_revision_id);
    expect((await admin.delete(`/v2/deployments/${delta.id}`)).status).toBe(204);
    expect((await getRevisionRow(delta.latest_revision_id)).status).toBe('INTERRUPTED');
    expect(entryOf(await desiredState(agentA, listenerA), delta.id)).toEqual({
      deployment_id: delta.id,
      name: 'agent-delta',
      namespace: 'agents',
      revision_id: null,
      action: 'delete',
      image_uri: null,
      resource_spec: null,
      secrets: [],
      manifests: [],
    });
    // An interrupted revision stays interrupted whatever the agent says.
    const late = await report(agentA, listenerA, {
      revisions: [{ revision_id: delta.latest_revision_id, status: 'DEPLOYED' }],
    });
    expect(late.body.rejected).toEqual([
      {
        revision_id: delta.latest_revision_id,
        reason: `Revision ID ${delta.latest_revision_id} is INTERRUPTED; it cannot move to DEPLOYED.`,
      },
    ]);
    expect((await report(agentA, listenerA, { deleted_deployments: [delta.id] })).body.deleted).toEqual([delta.id]);
  });

  it('validates the report body', async () => {
    const res = await report(agentA, listenerA, {
      revisions: [{ revision_id: 'nope', status: 'BUILDING' }],
      deleted_deployments: ['also-nope'],
    });
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: any) => [d.loc.join('.'), d.type])).toEqual([
      ['body.revisions.0.revision_id', 'uuid_parsing'],
      ['body.revisions.0.status', 'enum'],
      ['body.deleted_deployments.0', 'uuid_parsing'],
    ]);
    const tooMany = await report(agentA, listenerA, {
      deleted_deployments: Array.from({ length: 501 }, () => randomUUID()),
    });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'deleted_deployments'], type: 'too_long' }),
    ]);
  });
});

describe('listener check-in', () => {
  it('brings its UNKNOWN deployments back (READY with a database and a begun rollout, else AWAITING_DATABASE), and no other listener’s', async () => {
    const charlie = (await admin.get('/v2/deployments?name=agent-charlie')).body.resources[0];
    const echo = await createDeployment('agent-echo', listenerA);
    const bravo = (await admin.get('/v2/deployments?name=agent-bravo')).body.resources[0];
    // A listener's deployment records its database name at create and is READY once a rollout of
    // it begins (bravo's began: it comes back READY); echo's never did (it comes back
    // AWAITING_DATABASE); charlie stands for one created before creates recorded the name, still
    // waiting for its provision.deployment.
    await api.dataSource.query(`UPDATE deployments SET database_name = NULL WHERE id = $1`, [charlie.id]);
    // What the reconciler does to a silent listener's deployments.
    for (const id of [charlie.id, echo.id, bravo.id])
      expect(await transitionDeployment(api.dataSource.manager, id, 'UNKNOWN')).not.toBeNull();

    expect((await desiredState(agentA, listenerA)).status).toBe(200);
    expect((await getDeployment(charlie.id)).body.status).toBe('AWAITING_DATABASE');
    expect((await getDeployment(echo.id)).body.status).toBe('AWAITING_DATABASE');
    expect((await getDeployment(bravo.id)).body.status).toBe('UNKNOWN');

    expect((await report(agentB, listenerB, {})).status).toBe(200);
    expect((await getDeployment(bravo.id)).body.status).toBe('READY');
  });

  it('brings a rollout the reconciler marked UNKNOWN back to DEPLOYING, so the agent can finish it', async () => {
    const foxtrot = await createDeployment('agent-foxtrot', listenerA);
    const revisionId = foxtrot.latest_revision_id;
    await startRollout(revisionId);
    // What the reconciler does when the listener goes silent mid-rollout.
    await api.dataSource.transaction(async (m) => {
      expect(await transitionDeployment(m, foxtrot.id, 'UNKNOWN')).not.toBeNull();
      expect(
        await api.flow.transition(m, revisionId, 'UNKNOWN', { message: 'The listener stopped reporting.' }),
      ).not.toBeNull();
    });

    const res = await desiredState(agentA, listenerA);
    expect(entryOf(res, foxtrot.id)).toMatchObject({
      action: 'apply',
      revision_id: revisionId,
      secrets: [{ name: 'OPENAI_API_KEY', value: SECRET }],
    });
    expect(await getRevisionRow(revisionId)).toMatchObject({
      status: 'DEPLOYING',
      status_message: 'The listener is back; waiting for its report.',
    });
    // Its rollout had begun (the deployer would have made it READY then): it comes back READY.
    expect((await getDeployment(foxtrot.id)).body.status).toBe('READY');

    const done = await report(agentA, listenerA, { revisions: [{ revision_id: revisionId, status: 'DEPLOYED' }] });
    expect(done.body.applied).toEqual([revisionId]);
    expect((await getDeployment(foxtrot.id)).body.active_revision_id).toBe(revisionId);
  });

  it('DELETE /v2/listeners/{id} answers 400 while a deployment uses the listener', async () => {
    const res = await admin.delete(`/v2/listeners/${listenerA}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: `Listener ID ${listenerA} is still used by deployments; delete them first.` });
    expect((await admin.get(`/v2/listeners/${listenerA}`)).status).toBe(200);
    expect((await desiredState(agentA, listenerA)).status).toBe(200);
  });
});

describe('documentation and secrecy', () => {
  it('documents both endpoints in /openapi.json', async () => {
    const doc = (await admin.get('/openapi.json', { key: null })).body;
    const schemaOf = (op: any, status: string) => op.responses[status].content['application/json'].schema;
    const desired = doc.paths['/v2/listeners/{listener_id}/desired-state'].get;
    expect(schemaOf(desired, '200')).toEqual({ $ref: '#/components/schemas/ListenerDesiredState' });
    const reports = doc.paths['/v2/listeners/{listener_id}/reports'].post;
    expect(reports.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/ListenerReport',
    });
    expect(schemaOf(reports, '200')).toEqual({ $ref: '#/components/schemas/ListenerReportResult' });
    expect(doc.components.schemas.RevisionReport.properties.status.enum).toEqual([
      'DEPLOYING',
      'DEPLOYED',
      'DEPLOY_FAILED',
    ]);
    expect(doc.components.schemas.DesiredDeployment.required).toEqual(
      expect.arrayContaining(['deployment_id', 'namespace', 'revision_id', 'action', 'secrets', 'manifests']),
    );
  });

  it('never shows a secret value outside desired-state, nor logs one', () => {
    expect(otherResponses.length).toBeGreaterThan(20);
    for (const text of otherResponses) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(NEW_SECRET);
    }
    const logs = api.logs.text();
    expect(logs.length).toBeGreaterThan(0);
    expect(logs).not.toContain(SECRET);
    expect(logs).not.toContain(NEW_SECRET);
  });
});
