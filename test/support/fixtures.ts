import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { TestApi } from './test-api.js';

/** Registers a k8s listener over the API; returns its id. */
export async function createListener(api: TestApi, computeId: string, namespaces: string[] | null = ['agents', 'staging']): Promise<string> {
  const res = await api.http.post('/v2/listeners', { compute_type: 'k8s', compute_id: computeId, compute_config: { k8s_namespaces: namespaces } });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

/** A repohost deployment (its build fails in this release, so it never gets an artifact). */
export async function createRepohostDeployment(api: TestApi, name: string, extra: Record<string, unknown> = {}) {
  const res = await api.http.post('/v2/deployments', {
    name,
    source: 'repohost',
    source_config: { integration_id: randomUUID(), repo_url: 'https://git.example/acme/agent' },
    source_revision_config: { repo_ref: 'main' },
    ...extra,
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}
