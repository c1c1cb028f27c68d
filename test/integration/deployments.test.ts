import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/test-api.js';

let api: TestApi;
let listenerId: string;

beforeAll(async () => {
  api = await startTestApi();
  const res = await api.http.post('/v2/listeners', {
    compute_type: 'k8s',
    compute_id: 'deploy-cluster',
    compute_config: { k8s_namespaces: ['agents', 'staging'] },
  });
  listenerId = res.body.id;
});
afterAll(async () => {
  await api?.close();
});

const imageDeployment = (name: string, extra: Record<string, any> = {}) => ({
  name,
  source: 'external_container',
  source_config: { listener_id: listenerId, listener_config: { k8s_namespace: 'agents' }, ...(extra.source_config ?? {}) },
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
    expect(res.body.source_config.resource_spec).toMatchObject({ cpu: 1, memory_mb: 1024, cpu_limit: 2, min_scale: 1, max_scale: 1 });
    expect(res.text).not.toContain('sk-very-secret-value');
    const revision = await api.http.get(`/v2/deployments/${res.body.id}/revisions/${res.body.latest_revision_id}`);
    expect(revision.status).toBe(200);
    expect(revision.body).toMatchObject({ status: 'CREATING', source: 'external_container', secrets: [{ name: 'OPENAI_API_KEY' }] });
    const [outbox] = await api.dataSource.query(`SELECT job_name, payload FROM outbox WHERE payload->>'revisionId' = $1`, [
      res.body.latest_revision_id,
    ]);
    expect(outbox).toMatchObject({ job_name: 'rollout.revision', payload: { revisionId: res.body.latest_revision_id, attempt: 0 } });
    expect(JSON.stringify(outbox)).not.toContain('sk-very-secret-value');

    await api.relay.drain();
    const after = await api.http.get(`/v2/deployments/${res.body.id}/revisions/${res.body.latest_revision_id}`);
    expect(after.body.status).toBe('AWAITING_DEPLOY');
    const job = await api.queues.rollouts.getJob(`rollout-${res.body.latest_revision_id}-a0`);
    expect(job?.data).toEqual({ revisionId: res.body.latest_revision_id, attempt: 0, requestId: expect.any(String) });
  });

  it('accepts aliases and answers 409 for a taken name', async () => {
    const res = await api.http.post('/v2/deployments', imageDeployment('agent-alias', { top: { source: 'external_docker' } }));
    expect(res.status).toBe(201);
    expect(res.body.source).toBe('external_container');
    const dup = await api.http.post('/v2/deployments', imageDeployment('agent-alias'));
    expect(dup.status).toBe(409);
  });
});
