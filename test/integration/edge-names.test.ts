import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { otherWorkspaceClient } from '../support/fixtures.js';
import type { HttpClient } from '../support/http.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Deployments' names at the edge (docs/api.md, Deployments, `url`): `<name>.<apps domain>`, or
 * `<name>-<6 hex>` when another workspace's deployment holds the name already; unique in the
 * installation even under concurrent creates; within a DNS label's 63 characters.
 */
const EDGE_PORT = 18_180;
let api: TestApi;

beforeAll(async () => {
  api = await startTestApi({ SLIPWAY_EDGE_HTTP_PORT: String(EDGE_PORT), SLIPWAY_APPS_DOMAIN: 'apps.example.test' });
}, 60_000);

afterAll(async () => {
  await api?.close();
});

const create = (client: HttpClient, name: string) =>
  client.post('/v2/deployments', {
    name,
    source: 'internal_source',
    source_config: { deployment_type: 'dev' },
    source_revision_config: {},
  });

const labelOf = (url: string) => new URL(url).hostname.replace(/\.apps\.example\.test$/, '');

describe('edge names', () => {
  it("the first holder of a name gets it; another workspace's deployment of that name gets it with 6 random hex digits", async () => {
    const name = `agent-${randomUUID().slice(0, 6)}`;
    const first = await create(api.http, name);
    expect(first.status, first.text).toBe(201);
    expect(first.body.url).toBe(`http://${name}.apps.example.test:${EDGE_PORT}`);
    const other = await otherWorkspaceClient(api, `edge-${randomUUID().slice(0, 8)}`);
    const second = await create(other.client, name);
    expect(second.status, second.text).toBe(201);
    expect(labelOf(second.body.url)).toMatch(new RegExp(`^${name}-[0-9a-f]{6}$`));
    // Read back, the url is the same (it is stored, not recomputed per read).
    expect((await other.client.get(`/v2/deployments/${second.body.id}`)).body.url).toBe(second.body.url);
  });

  it('a 63-character name taken elsewhere still makes a label of at most 63 characters', async () => {
    const name = `n${randomUUID().replaceAll('-', '')}${'x'.repeat(30)}`.slice(0, 63);
    expect((await create(api.http, name)).status).toBe(201);
    const other = await otherWorkspaceClient(api, `edge-${randomUUID().slice(0, 8)}`);
    const second = await create(other.client, name);
    expect(second.status, second.text).toBe(201);
    const label = labelOf(second.body.url);
    expect(label.length).toBeLessThanOrEqual(63);
    expect(label).toMatch(/^[a-z0-9-]+-[0-9a-f]{6}$/);
  });

  it('concurrent creates of one name in several workspaces all succeed, each with its own label', async () => {
    const name = `race-${randomUUID().slice(0, 6)}`;
    const clients = await Promise.all(
      Array.from({ length: 5 }, (_, i) => otherWorkspaceClient(api, `race-${i}-${randomUUID().slice(0, 6)}`)),
    );
    const created = await Promise.all(clients.map(({ client }) => create(client, name)));
    for (const c of created) expect(c.status, c.text).toBe(201);
    const labels = created.map((c) => labelOf(c.body.url));
    expect(new Set(labels).size).toBe(5);
    expect(labels.filter((l) => l === name)).toHaveLength(1);
  });

  it('a name freed by a delete is given again', async () => {
    const name = `freed-${randomUUID().slice(0, 6)}`;
    const first = await create(api.http, name);
    await api.dataSource.query(`DELETE FROM deployments WHERE id = $1`, [first.body.id]);
    const other = await otherWorkspaceClient(api, `edge-${randomUUID().slice(0, 8)}`);
    expect((await create(other.client, name)).body.url).toBe(`http://${name}.apps.example.test:${EDGE_PORT}`);
  });
});
