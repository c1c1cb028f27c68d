import { expect } from 'vitest';
import { repohostFixture } from './git-fixtures.js';
import type { TestApi } from './test-api.js';

/** Registers a k8s listener over the API; returns its id. */
export async function createListener(api: TestApi, computeId: string, namespaces: string[] | null = ['agents', 'staging']): Promise<string> {
  const res = await api.http.post('/v2/listeners', { compute_type: 'k8s', compute_id: computeId, compute_config: { k8s_namespaces: namespaces } });
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
