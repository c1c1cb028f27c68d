import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { issueApiKey } from '@slipway/db';
import type { HttpClient } from './http.js';
import { repohostFixture } from './git-fixtures.js';
import type { TestApi } from './test-api.js';

/** Registers a k8s listener over the API; returns its id. */
export async function createListener(
  api: TestApi,
  computeId: string,
  namespaces: string[] | null = ['agents', 'staging'],
): Promise<string> {
  const res = await api.http.post('/v2/listeners', {
    compute_type: 'k8s',
    compute_id: computeId,
    compute_config: { k8s_namespaces: namespaces },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

/**
 * A repohost deployment of the real git repository of a `local` integration (C4 needs both to
 * exist; `repohostFixture` makes them once per test api). Nothing builds unless a test runs a builder.
 */
export async function createRepohostDeployment(api: TestApi, name: string, extra: Record<string, unknown> = {}) {
  const { integrationId, repoUrl } = await repohostFixture(api);
  const res = await api.http.post('/v2/deployments', {
    name,
    source: 'repohost',
    source_config: { integration_id: integrationId, repo_url: repoUrl },
    source_revision_config: { repo_ref: 'main' },
    ...extra,
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/**
 * An `external_container` deployment of `image` on a listener (its first revision is
 * `latest_revision_id`), made with the admin key, or through `client` (another workspace's).
 */
export async function createImageDeployment(
  api: TestApi | HttpClient,
  name: string,
  listenerId: string,
  { image = 'registry.example/agent:1', secrets = [] as Array<{ name: string; value: string }> } = {},
): Promise<{ id: string; latest_revision_id: string }> {
  const client = 'http' in api ? api.http : api;
  const res = await client.post('/v2/deployments', {
    name,
    source: 'external_container',
    source_config: { listener_id: listenerId, listener_config: { k8s_namespace: 'agents' } },
    source_revision_config: { image_uri: image },
    secrets,
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/** A second workspace of the test organization, with an admin client of its own (tenancy checks). */
export async function otherWorkspaceClient(
  api: TestApi,
  name: string,
): Promise<{ workspaceId: string; key: string; client: HttpClient }> {
  const workspaceId = randomUUID();
  await api.dataSource.query(`INSERT INTO workspaces (id, organization_id, name) VALUES ($1, $2, $3)`, [
    workspaceId,
    api.organizationId,
    name,
  ]);
  const { key } = await issueApiKey(api.dataSource.manager, {
    organizationId: api.organizationId,
    workspaceId,
    scope: 'workspace',
    role: 'admin',
  });
  return { workspaceId, key, client: api.http.as(key) };
}
