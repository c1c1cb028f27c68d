import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretsCodec } from '@slipway/crypto';
import { createListener } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

let api: TestApi;
let listenerId: string;

beforeAll(async () => {
  api = await startTestApi();
  listenerId = await createListener(api, 'deploy-cluster');
});
afterAll(async () => {
  await api?.close();
});

const imageDeployment = (name: string, extra: Record<string, any> = {}) => ({
  name,
  source: 'external_container',
  source_config: {
    listener_id: listenerId,
    listener_config: { k8s_namespace: 'agents' },
    ...(extra.source_config ?? {}),
  },
  source_revision_config: { image_uri: 'registry.example/agent:1.0.0', ...(extra.source_revision_config ?? {}) },
  secrets: extra.secrets ?? [{ name: 'OPENAI_API_KEY', value: 'sk-very-secret-value' }],
  ...(extra.top ?? {}),
});

describe('POST /v2/deployments', () => {
  it('creates an external_container deployment with its first revision', async () => {
    const res = await api.http.post('/v2/deployments', imageDeployment('agent-one'));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: 'agent-one',
      source: 'external_container',
      status: 'AWAITING_DATABASE',
      deployment_type: null,
      active_revision_id: null,
      tenant_id: api.workspaceId,
      secrets: [{ name: 'OPENAI_API_KEY', value: '********' }],
      source_revision_config: { image_uri: 'registry.example/agent:1.0.0' },
      source_config: { listener_id: listenerId, listener_config: { k8s_namespace: 'agents' } },
    });
    expect(res.body.source_config.resource_spec).toMatchObject({
      cpu: 1,
      memory_mb: 1024,
      cpu_limit: 2,
      min_scale: 1,
      max_scale: 1,
    });
    expect(res.text).not.toContain('sk-very-secret-value');
    const revision = await api.http.get(`/v2/deployments/${res.body.id}/revisions/${res.body.latest_revision_id}`);
    expect(revision.status).toBe(200);
    expect(revision.body).toMatchObject({
      status: 'CREATING',
      source: 'external_container',
      secrets: [{ name: 'OPENAI_API_KEY' }],
    });
    const [outbox] = await api.dataSource.query(
      `SELECT job_name, payload FROM outbox WHERE payload->>'revisionId' = $1`,
      [res.body.latest_revision_id],
    );
    expect(outbox).toMatchObject({
      job_name: 'rollout.revision',
      payload: { revisionId: res.body.latest_revision_id, attempt: 0 },
    });
    expect(JSON.stringify(outbox)).not.toContain('sk-very-secret-value');

    await api.relay.drain();
    const after = await api.http.get(`/v2/deployments/${res.body.id}/revisions/${res.body.latest_revision_id}`);
    expect(after.body.status).toBe('AWAITING_DEPLOY');
    const job = await api.queues.rollouts.getJob(`rollout-${res.body.latest_revision_id}-a0`);
    expect(job?.data).toEqual({ revisionId: res.body.latest_revision_id, attempt: 0, requestId: expect.any(String) });
  });

  it('accepts aliases and answers 409 for a taken name', async () => {
    const res = await api.http.post(
      '/v2/deployments',
      imageDeployment('agent-alias', { top: { source: 'external_docker' } }),
    );
    expect(res.status).toBe(201);
    expect(res.body.source).toBe('external_container');
    const dup = await api.http.post('/v2/deployments', imageDeployment('agent-alias'));
    expect(dup.status).toBe(409);
  });
});

/** The stored secrets of a row, opened with the product's key and the row id as context. */
async function openSealed(
  table: 'deployments' | 'revisions',
  id: string,
): Promise<Array<{ name: string; value: string }>> {
  const [row] = await api.dataSource.query(`SELECT secrets_sealed FROM ${table} WHERE id = $1`, [id]);
  return row?.secrets_sealed ? JSON.parse(secretsCodec(api.config).open(row.secrets_sealed, id)) : [];
}

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const [row] = await api.dataSource.query(`SELECT count(*)::int AS n FROM ${sql}`, params);
  return row.n;
}

describe('GET /v2/deployments/{id}', () => {
  it('returns the deployment; unknown → 404; malformed id → 422', async () => {
    const created = await api.http.post('/v2/deployments', imageDeployment('agent-get'));
    const res = await api.http.get(`/v2/deployments/${created.body.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created.body);
    const missing = randomUUID();
    expect((await api.http.get(`/v2/deployments/${missing}`)).body).toEqual({
      detail: `Deployment ID ${missing} not found.`,
    });
    const bad = await api.http.get('/v2/deployments/123');
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({
      detail: [{ loc: ['path', 'deployment_id'], msg: 'Input should be a valid UUID', type: 'uuid_parsing' }],
    });
  });
});

describe('DELETE /v2/deployments/{id}', () => {
  it('204 → AWAITING_DELETE, open revisions INTERRUPTED, teardown enqueued; the deployment is frozen', async () => {
    const created = await api.http.post('/v2/deployments', imageDeployment('agent-delete'));
    const id = created.body.id;
    const r1 = created.body.latest_revision_id;
    // r1 deployed (terminal), r2 in flight, r3 queued behind it.
    await api.relay.drain();
    await api.dataSource.transaction(async (m) => {
      expect(await api.flow.transition(m, r1, 'DEPLOYING')).not.toBeNull();
      expect(await api.flow.transition(m, r1, 'DEPLOYED')).not.toBeNull();
    });
    const r2 = (await api.http.patch(`/v2/deployments/${id}`, { secrets: [] })).body.latest_revision_id;
    const r3 = (
      await api.http.patch(`/v2/deployments/${id}`, {
        image_version: '2',
        source_revision_config: { image_uri: 'x/y:2' },
      })
    ).body.latest_revision_id;

    const res = await api.http.delete(`/v2/deployments/${id}`);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');

    const got = await api.http.get(`/v2/deployments/${id}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      status: 'AWAITING_DELETE',
      active_revision_id: r1,
      tracing_project_id: created.body.tracing_project_id,
    });
    const revisions = (await api.http.get(`/v2/deployments/${id}/revisions`)).body.resources;
    expect(revisions.map((r: any) => [r.id, r.status, r.status_message])).toEqual([
      [r3, 'INTERRUPTED', 'Deployment deleted.'],
      [r2, 'INTERRUPTED', 'Deployment deleted.'],
      [r1, 'DEPLOYED', null],
    ]);
    const teardown = await api.dataSource.query(
      `SELECT queue, job_id, payload FROM outbox WHERE job_name = 'teardown.deployment' AND payload->>'deploymentId' = $1`,
      [id],
    );
    expect(teardown).toEqual([
      { queue: 'rollouts', job_id: `teardown-${id}`, payload: { deploymentId: id, requestId: expect.any(String) } },
    ]);
    // The tracing project stays by default.
    expect(await count(`tracing_projects WHERE id = $1`, [created.body.tracing_project_id])).toBe(1);

    const patch = await api.http.patch(`/v2/deployments/${id}`, { image_version: '3' });
    expect(patch.status).toBe(400);
    expect(patch.body).toEqual({ detail: `Deployment ID ${id} is being deleted and can no longer be changed.` });
    const redeploy = await api.http.post(`/v2/deployments/${id}/revisions/${r1}/redeploy`);
    expect(redeploy.status).toBe(400);
    expect(redeploy.body).toEqual({ detail: `Deployment ID ${id} is being deleted.` });
    expect(await count(`revisions WHERE deployment_id = $1`, [id])).toBe(3);

    // Deleting again is accepted and enqueues nothing more.
    expect((await api.http.delete(`/v2/deployments/${id}`)).status).toBe(204);
    expect(await count(`outbox WHERE job_name = 'teardown.deployment' AND payload->>'deploymentId' = $1`, [id])).toBe(
      1,
    );
  });

  it('?delete_tracing_project=true removes the tracing project; the name is reusable once the row is gone', async () => {
    const created = await api.http.post('/v2/deployments', imageDeployment('agent-delete-tp'));
    const tracingProjectId = created.body.tracing_project_id;
    const res = await api.http.delete(`/v2/deployments/${created.body.id}?delete_tracing_project=true`);
    expect(res.status).toBe(204);
    expect(await count(`tracing_projects WHERE id = $1`, [tracingProjectId])).toBe(0);
    expect((await api.http.get(`/v2/deployments/${created.body.id}`)).body).toMatchObject({
      status: 'AWAITING_DELETE',
      tracing_project_id: null,
    });

    // While teardown runs the name is still in use.
    expect((await api.http.post('/v2/deployments', imageDeployment('agent-delete-tp'))).status).toBe(409);
    await api.dataSource.query(`DELETE FROM deployments WHERE id = $1`, [created.body.id]);
    const again = await api.http.post('/v2/deployments', imageDeployment('agent-delete-tp'));
    expect(again.status).toBe(201);
    expect(again.body.tracing_project_id).toEqual(expect.any(String));
    expect(again.body.tracing_project_id).not.toBe(tracingProjectId);
  });

  it('unknown → 404; a bad flag → 422', async () => {
    const missing = randomUUID();
    const res = await api.http.delete(`/v2/deployments/${missing}`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: `Deployment ID ${missing} not found.` });
    const bad = await api.http.delete(`/v2/deployments/${missing}?delete_tracing_project=maybe`);
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({
      detail: [
        {
          loc: ['query', 'delete_tracing_project'],
          msg: 'Input should be a valid boolean, unable to interpret input',
          type: 'bool_parsing',
        },
      ],
    });
  });
});

describe('Idempotency-Key', () => {
  const keyed = (key: string) => ({ headers: { 'Idempotency-Key': key } });

  it('POST: same key and body → the same 201 replayed, one deployment; another body → 409', async () => {
    const key = `create-${randomUUID()}`;
    const body = imageDeployment('agent-idem');
    const first = await api.http.post('/v2/deployments', body, keyed(key));
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const second = await api.http.post('/v2/deployments', body, keyed(key));
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
    expect(await count(`deployments WHERE name = 'agent-idem'`)).toBe(1);
    expect(await count(`revisions WHERE deployment_id = $1`, [first.body.id])).toBe(1);

    const other = await api.http.post('/v2/deployments', imageDeployment('agent-idem-2'), keyed(key));
    expect(other.status).toBe(409);
    expect(other.body).toEqual({ detail: `Idempotency-Key '${key}' was already used with a different request.` });
    expect(await count(`deployments WHERE name = 'agent-idem-2'`)).toBe(0);
    // The same key on another operation is another request too.
    const patch = await api.http.patch(`/v2/deployments/${first.body.id}`, { image_version: '9' }, keyed(key));
    expect(patch.status).toBe(409);
  });

  it('concurrent identical requests with one key make one deployment and all get its body', async () => {
    const key = `race-${randomUUID()}`;
    const body = imageDeployment('agent-idem-race');
    const results = await Promise.all(
      Array.from({ length: 5 }, () => api.http.post('/v2/deployments', body, keyed(key))),
    );
    expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    expect(results.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(4);
    expect(await count(`deployments WHERE name = 'agent-idem-race'`)).toBe(1);
    expect(await count(`revisions WHERE deployment_id = $1`, [results[0]!.body.id])).toBe(1);
  });

  it('a failed first attempt leaves no key behind: the key is free for the retry', async () => {
    const key = `retry-${randomUUID()}`;
    const bad = await api.http.post(
      '/v2/deployments',
      imageDeployment('agent-idem-retry', { source_config: { listener_id: randomUUID() } }),
      keyed(key),
    );
    expect(bad.status).toBe(404);
    const ok = await api.http.post('/v2/deployments', imageDeployment('agent-idem-retry'), keyed(key));
    expect(ok.status).toBe(201);
    expect(ok.headers.get('idempotent-replayed')).toBeNull();
  });

  it('PATCH: replayed without a second revision; another body with the key → 409', async () => {
    const created = await api.http.post('/v2/deployments', imageDeployment('agent-idem-patch'));
    const key = `patch-${randomUUID()}`;
    const body = { secrets: [{ name: 'ROTATED', value: 'rotated-secret-value' }] };
    const first = await api.http.patch(`/v2/deployments/${created.body.id}`, body, keyed(key));
    expect(first.status).toBe(200);
    const second = await api.http.patch(`/v2/deployments/${created.body.id}`, body, keyed(key));
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
    expect(await count(`revisions WHERE deployment_id = $1`, [created.body.id])).toBe(2);
    const other = await api.http.patch(`/v2/deployments/${created.body.id}`, { secrets: [] }, keyed(key));
    expect(other.status).toBe(409);
    expect(await count(`revisions WHERE deployment_id = $1`, [created.body.id])).toBe(2);
  });

  it('redeploy: replayed with the same new revision; the key on another revision → 409', async () => {
    const created = await api.http.post('/v2/deployments', imageDeployment('agent-idem-redeploy'));
    const id = created.body.id;
    const r1 = created.body.latest_revision_id;
    const key = `redeploy-${randomUUID()}`;
    const first = await api.http.post(`/v2/deployments/${id}/revisions/${r1}/redeploy`, undefined, keyed(key));
    expect(first.status).toBe(200);
    const second = await api.http.post(`/v2/deployments/${id}/revisions/${r1}/redeploy`, undefined, keyed(key));
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body.latest_revision_id).toBe(first.body.latest_revision_id);
    expect(await count(`revisions WHERE deployment_id = $1`, [id])).toBe(2);
    const other = await api.http.post(
      `/v2/deployments/${id}/revisions/${first.body.latest_revision_id}/redeploy`,
      undefined,
      keyed(key),
    );
    expect(other.status).toBe(409);
    // Without a key every redeploy is a new one.
    expect((await api.http.post(`/v2/deployments/${id}/revisions/${r1}/redeploy`)).status).toBe(200);
    expect(await count(`revisions WHERE deployment_id = $1`, [id])).toBe(3);
  });

  it('keys are per workspace: the same key in another workspace is a new request', async () => {
    const otherWorkspaceId = randomUUID();
    await api.dataSource.query(`INSERT INTO workspaces (id, organization_id, name) VALUES ($1, $2, 'idem-other')`, [
      otherWorkspaceId,
      api.organizationId,
    ]);
    const other = api.http.as(await api.mintKey({ workspaceId: otherWorkspaceId, role: 'admin' }));
    const listener = await other.post('/v2/listeners', {
      compute_type: 'k8s',
      compute_id: 'c',
      compute_config: { k8s_namespaces: null },
    });
    const key = `shared-${randomUUID()}`;
    const body = (l: string) => ({ ...imageDeployment('agent-idem-ws'), source_config: { listener_id: l } });
    const mine = await api.http.post('/v2/deployments', body(listenerId), keyed(key));
    const theirs = await other.post('/v2/deployments', body(listener.body.id), keyed(key));
    expect([mine.status, theirs.status]).toEqual([201, 201]);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.body.tenant_id).toBe(otherWorkspaceId);
  });

  it.each([
    ['300 characters', 'k'.repeat(300), 'string_too_long', 'String should have at most 255 characters'],
    ['a space', 'has space', 'string_pattern_mismatch', "String should match pattern '^[\\x21-\\x7e]+$'"],
  ])('a bad key (%s) → 422 at the header, nothing written', async (_what, key, type, msg) => {
    const res = await api.http.post('/v2/deployments', imageDeployment('agent-idem-bad'), keyed(key));
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: [{ loc: ['header', 'idempotency-key'], msg, type }] });
    expect(await count(`deployments WHERE name = 'agent-idem-bad'`)).toBe(0);
  });
});

describe('secret values never leave', () => {
  it('appear in no response, log line, outbox row, queued job or table (sealed columns included)', async () => {
    const first = `sv-first-${randomUUID()}`;
    const second = `sv-second-${randomUUID()}`;
    const texts: string[] = [];
    const keep = <T extends { text: string }>(res: T): T => {
      texts.push(res.text);
      return res;
    };

    const created = keep(
      await api.http.post(
        '/v2/deployments',
        imageDeployment('agent-secrets', { secrets: [{ name: 'FIRST', value: first }] }),
        {
          headers: { 'Idempotency-Key': `secrets-${randomUUID()}` },
        },
      ),
    );
    expect(created.status).toBe(201);
    const id = created.body.id;
    keep(await api.http.get(`/v2/deployments/${id}`));
    keep(await api.http.get('/v2/deployments'));
    const patched = keep(
      await api.http.patch(`/v2/deployments/${id}`, {
        secrets: [
          { name: 'FIRST', value: '********' },
          { name: 'SECOND', value: second },
        ],
      }),
    );
    expect(patched.status).toBe(200);
    // The values really are stored (so their absence elsewhere means something).
    expect((await openSealed('deployments', id)).map((s) => s.value)).toEqual([first, second]);
    expect((await openSealed('revisions', patched.body.latest_revision_id)).map((s) => s.value)).toEqual([
      first,
      second,
    ]);
    keep(await api.http.get(`/v2/deployments/${id}/revisions`));
    keep(await api.http.get(`/v2/deployments/${id}/revisions/${patched.body.latest_revision_id}`));
    keep(await api.http.post(`/v2/deployments/${id}/revisions/${created.body.latest_revision_id}/redeploy`));
    // Refused requests that carried secret values.
    expect(
      keep(
        await api.http.patch(`/v2/deployments/${id}`, { name: 'renamed', secrets: [{ name: 'FIRST', value: first }] }),
      ).status,
    ).toBe(400);
    expect(
      keep(await api.http.patch(`/v2/deployments/${id}`, { secrets: [{ name: 'bad name', value: second }] })).status,
    ).toBe(422);
    expect(
      keep(
        await api.http.post(
          '/v2/deployments',
          imageDeployment('agent-secrets', { secrets: [{ name: 'X', value: first }] }),
        ),
      ).status,
    ).toBe(409);

    await api.relay.drain();
    for (const value of [first, second]) {
      for (const text of texts) expect(text).not.toContain(value);
      expect(api.logs.text().length).toBeGreaterThan(0);
      expect(api.logs.text()).not.toContain(value);

      expect(await count(`outbox WHERE payload::text LIKE $1`, [`%${value}%`])).toBe(0);
      for (const queue of [api.queues.rollouts, api.queues.builds, api.queues.maintenance]) {
        const jobs = await queue.getJobs(['waiting', 'delayed', 'prioritized', 'active', 'completed', 'failed']);
        for (const job of jobs)
          expect(JSON.stringify({ data: job.data, name: job.name, opts: job.opts })).not.toContain(value);
      }
      expect(await count(`deployments WHERE secrets_sealed LIKE $1`, [`%${value}%`])).toBe(0);
      expect(await count(`revisions WHERE secrets_sealed LIKE $1`, [`%${value}%`])).toBe(0);

      // And no table of the database holds it in plaintext anywhere (idempotency replays included).
      const tables: Array<{ table_name: string }> = await api.dataSource.query(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
      );
      expect(tables.map((t) => t.table_name)).toEqual(
        expect.arrayContaining(['deployments', 'revisions', 'idempotency_keys', 'outbox']),
      );
      for (const { table_name } of tables) {
        expect(await count(`"${table_name}" t WHERE t::text LIKE $1`, [`%${value}%`]), table_name).toBe(0);
      }
    }
    // The jobs were there to be read.
    expect((await api.queues.rollouts.getJobs(['waiting', 'delayed', 'prioritized'])).length).toBeGreaterThan(0);
  });
});
