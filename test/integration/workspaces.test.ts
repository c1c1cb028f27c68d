import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TenancyRepository } from '@slipway/db';
import { createListener } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/** `GET /v2/workspaces` (docs/api.md, Authentication and tenancy): what a credential may act in. */

let api: TestApi;
let stagingId: string;

beforeAll(async () => {
  api = await startTestApi();
  stagingId = (await new TenancyRepository(api.dataSource.manager).createWorkspace(api.organizationId, 'staging')).id;
  // Another organization's workspace: never listed.
  await new TenancyRepository(api.dataSource.manager).createOrganization('someone-else');
});
afterAll(async () => {
  await api?.close();
});

describe('GET /v2/workspaces', () => {
  it('lists every workspace of the organization to an organization-scoped key, without X-Tenant-Id', async () => {
    const orgKey = await api.mintKey({ scope: 'organization', workspaceId: null, role: 'member' });
    const res = await api.http.as(orgKey).get('/v2/workspaces');
    expect(res.status, res.text).toBe(200);
    expect(res.body.resources.map((w: { id: string; name: string }) => [w.id, w.name])).toEqual([
      [api.workspaceId, 'default'],
      [stagingId, 'staging'],
    ]);
    expect(res.body.offset).toBe(2);
    const page = await api.http.as(orgKey).get('/v2/workspaces?limit=1&offset=1');
    expect(page.body).toEqual({ resources: [expect.objectContaining({ id: stagingId })], offset: 2 });
  });

  it('shows a workspace-scoped key its own workspace only', async () => {
    const res = await api.http.get('/v2/workspaces');
    expect(res.status).toBe(200);
    expect(res.body.resources).toEqual([
      { id: api.workspaceId, name: 'default', created_at: expect.stringMatching(/Z$/) },
    ]);
    expect((await api.http.get('/v2/workspaces?offset=1')).body).toEqual({ resources: [], offset: 1 });
  });

  it("refuses no key (401) and a listener agent's key (403)", async () => {
    expect((await api.http.get('/v2/workspaces', { key: null })).status).toBe(401);
    const agentKey = await api.mintKey({ listenerId: await createListener(api, 'ws-agent') });
    expect((await api.http.as(agentKey).get('/v2/workspaces')).status).toBe(403);
  });
});
