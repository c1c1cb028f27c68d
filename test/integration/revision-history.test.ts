import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RevisionStatus } from '@slipway/domain';
import { createImageDeployment, createListener } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * `GET /v2/deployments/{id}/revision-history` (docs/api.md, Revisions): each revision's status
 * changes as the transition function recorded them, with the time spent in each status.
 */

let api: TestApi;
let listenerId: string;

beforeAll(async () => {
  api = await startTestApi();
  listenerId = await createListener(api, 'history-cluster', ['agents']);
});
afterAll(async () => {
  await api?.close();
});

const createImage = (name: string) => createImageDeployment(api, name, listenerId);

/** Moves a revision through the product's own transition function, as the workers do. */
async function move(revisionId: string, to: RevisionStatus, message?: string): Promise<void> {
  const applied = await api.dataSource.transaction((m) => api.flow.transition(m, revisionId, to, { message }));
  expect(applied, `${revisionId} → ${to}`).not.toBeNull();
}

const history = (id: string, query = '') => api.http.get(`/v2/deployments/${id}/revision-history${query}`);

describe('GET /v2/deployments/{id}/revision-history', () => {
  it('lists the newest revisions first, each with its changes in order and the time spent in each status', async () => {
    const d = await createImage('history-one');
    const first = d.latest_revision_id;
    await api.relay.drain();
    await move(first, 'DEPLOYING');
    await new Promise((r) => setTimeout(r, 30));
    await move(first, 'DEPLOY_FAILED', 'pods never became ready');
    const patched = await api.http.patch(`/v2/deployments/${d.id}`, {
      source_revision_config: { image_uri: 'registry.example/agent:2' },
    });
    const second = patched.body.latest_revision_id as string;

    const res = await history(d.id);
    expect(res.status, res.text).toBe(200);
    expect(res.body.resources.map((h: { revision_id: string }) => h.revision_id)).toEqual([second, first]);
    const failed = res.body.resources[1];
    expect(failed).toMatchObject({ status: 'DEPLOY_FAILED', status_message: 'pods never became ready' });
    expect(failed.changes.map((c: { from: string; to: string }) => `${c.from}>${c.to}`)).toEqual([
      'CREATING>AWAITING_DEPLOY',
      'AWAITING_DEPLOY>DEPLOYING',
      'DEPLOYING>DEPLOY_FAILED',
    ]);
    // At least the 30 ms it waited in DEPLOYING; times are ISO 8601 and ordered.
    expect(failed.changes[2].time_in_status_ms).toBeGreaterThanOrEqual(25);
    const times = failed.changes.map((c: { at: string }) => Date.parse(c.at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(failed.changes[0].at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const limited = await history(d.id, '?limit=1');
    expect(limited.body.resources.map((h: { revision_id: string }) => h.revision_id)).toEqual([second]);
  });

  it('answers 404 for a deployment of another workspace or none, and 422 for a bad limit', async () => {
    const d = await createImage('history-two');
    const otherWorkspace = await api.dataSource.query(
      `INSERT INTO workspaces (id, organization_id, name) VALUES ($1, $2, 'other') RETURNING id`,
      [randomUUID(), api.organizationId],
    );
    const stranger = api.http.as(await api.mintKey({ workspaceId: otherWorkspace[0].id }));
    const refused = await stranger.get(`/v2/deployments/${d.id}/revision-history`);
    expect(refused.status).toBe(404);
    expect(refused.body).toEqual({ detail: `Deployment ID ${d.id} not found.` });
    const missing = randomUUID();
    expect((await history(missing)).body).toEqual({ detail: `Deployment ID ${missing} not found.` });
    for (const limit of ['0', '101', 'x']) {
      const bad = await history(d.id, `?limit=${limit}`);
      expect(bad.status, limit).toBe(422);
      expect(bad.body.detail[0].loc).toEqual(['query', 'limit']);
    }
  });
});
