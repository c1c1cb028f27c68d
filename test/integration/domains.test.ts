import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { otherWorkspaceClient } from '../support/fixtures.js';
import type { HttpClient } from '../support/http.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Custom domains as a resource (docs/api.md, Domains): each host held by one deployment in the
 * whole installation, claimed through `POST …/domains` or `source_config.custom_url`, pending
 * until verified (verification is on here), released by DELETE or the deployment's delete, and
 * never a rollout. Reserved hosts (the apps domain's names, localhost, the api's host) are
 * nobody's. The edge's part (verification, routing) is test/e2e/edge.test.ts.
 */
let api: TestApi;
let other: { workspaceId: string; client: HttpClient };

beforeAll(async () => {
  api = await startTestApi({
    SLIPWAY_EDGE_HTTP_PORT: '18180',
    SLIPWAY_APPS_DOMAIN: 'apps.example.test',
    SLIPWAY_PUBLIC_URL: 'https://slipway.example.test',
  });
  other = await otherWorkspaceClient(api, `domains-${randomUUID().slice(0, 8)}`);
}, 60_000);

afterAll(async () => {
  await api?.close();
});

const host = (prefix = 'agent') => `${prefix}-${randomUUID().slice(0, 8)}.example.com`;

async function deployment(client: HttpClient = api.http, sourceConfig: Record<string, unknown> = {}) {
  const res = await client.post('/v2/deployments', {
    name: `d-${randomUUID().slice(0, 8)}`,
    source: 'internal_source',
    source_config: { deployment_type: 'dev', ...sourceConfig },
    source_revision_config: {},
  });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; latest_revision_id: string | null };
}

const domains = async (id: string, client: HttpClient = api.http) =>
  (await client.get(`/v2/deployments/${id}/domains`)).body.resources as any[];

describe('claiming a host', () => {
  it('is pending verification, with the TXT record to publish, and listed', async () => {
    const d = await deployment();
    const name = host();
    const res = await api.http.post(`/v2/deployments/${d.id}/domains`, {
      host: `https://${name.toUpperCase()}:443/some/path`,
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ host: name, state: 'pending_verification', error: null, from_custom_url: false });
    expect(res.body.verification).toEqual({
      type: 'TXT',
      name: `_slipway-challenge.${name}`,
      value: expect.stringMatching(/^slw-verify-/),
    });
    expect(await domains(d.id)).toEqual([res.body]);
    // Claiming it again is no error: the deployment holds it.
    const again = await api.http.post(`/v2/deployments/${d.id}/domains`, { host: name });
    expect(again.status).toBe(200);
    expect(again.body.verification.value).toBe(res.body.verification.value);
  });

  it('a host held by one deployment cannot be claimed by another, in this workspace or any other (409)', async () => {
    const [a, b, c] = [await deployment(), await deployment(), await deployment(other.client)];
    const name = host();
    expect((await api.http.post(`/v2/deployments/${a.id}/domains`, { host: name })).status).toBe(201);
    const same = await api.http.post(`/v2/deployments/${b.id}/domains`, { host: name });
    expect(same.status).toBe(409);
    const elsewhere = await other.client.post(`/v2/deployments/${c.id}/domains`, {
      host: name.replace('agent', 'AGENT'),
    });
    expect(elsewhere.status).toBe(409);
    // The refusal names no deployment.
    expect(elsewhere.text).not.toContain(a.id);
    expect(await domains(c.id, other.client)).toEqual([]);
  });

  it('refuses what is no domain (400) and the hosts that are nobody’s (422)', async () => {
    const d = await deployment();
    for (const bad of [
      '127.0.0.1',
      'localhost-only',
      'bad_label.example.com',
      '-x.example.com',
      '[::1]',
      'a'.repeat(64) + '.example.com',
    ]) {
      expect((await api.http.post(`/v2/deployments/${d.id}/domains`, { host: bad })).status, bad).toBe(400);
    }
    for (const reserved of ['x.localhost', 'apps.example.test', 'someone.apps.example.test', 'slipway.example.test']) {
      expect((await api.http.post(`/v2/deployments/${d.id}/domains`, { host: reserved })).status, reserved).toBe(422);
    }
    expect(await domains(d.id)).toEqual([]);
  });

  it('a deployment of another workspace is not found (404)', async () => {
    const d = await deployment(other.client);
    expect((await api.http.post(`/v2/deployments/${d.id}/domains`, { host: host() })).status).toBe(404);
    expect((await api.http.get(`/v2/deployments/${d.id}/domains`)).status).toBe(404);
  });
});

describe('releasing a host', () => {
  it('DELETE frees it for anyone, by path or by ?host=', async () => {
    const [a, b] = [await deployment(), await deployment(other.client)];
    const [one, two] = [host(), host()];
    await api.http.post(`/v2/deployments/${a.id}/domains`, { host: one });
    await api.http.post(`/v2/deployments/${a.id}/domains`, { host: two });
    expect((await api.http.delete(`/v2/deployments/${a.id}/domains/${one}`)).status).toBe(204);
    expect((await api.http.delete(`/v2/deployments/${a.id}/domains?host=${two}`)).status).toBe(204);
    expect((await api.http.delete(`/v2/deployments/${a.id}/domains/${two}`)).status).toBe(404);
    expect((await other.client.post(`/v2/deployments/${b.id}/domains`, { host: one })).status).toBe(201);
  });

  it("the deployment's delete frees its hosts at once", async () => {
    const [a, b] = [await deployment(), await deployment(other.client)];
    const name = host();
    await api.http.post(`/v2/deployments/${a.id}/domains`, { host: name });
    expect((await api.http.delete(`/v2/deployments/${a.id}`)).status).toBe(204);
    expect((await other.client.post(`/v2/deployments/${b.id}/domains`, { host: name })).status).toBe(201);
  });
});

describe('source_config.custom_url', () => {
  it('claims its host at create, moves with a PATCH, and never makes a revision', async () => {
    const first = host('custom');
    const d = await deployment(api.http, { custom_url: `https://${first}` });
    expect(await domains(d.id)).toEqual([
      expect.objectContaining({ host: first, from_custom_url: true, state: 'pending_verification' }),
    ]);
    const second = host('custom');
    const patched = await api.http.patch(`/v2/deployments/${d.id}`, {
      source_config: { custom_url: `https://${second}/` },
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.latest_revision_id).toBe(d.latest_revision_id);
    expect(patched.body.source_config.custom_url).toBe(`https://${second}/`);
    expect((await domains(d.id)).map((x) => x.host)).toEqual([second]);
  });

  it('a custom_url on a host another deployment holds is refused (409), nothing written', async () => {
    const a = await deployment();
    const name = host();
    await api.http.post(`/v2/deployments/${a.id}/domains`, { host: name });
    const before = (await api.dataSource.query(`SELECT count(*)::int AS n FROM deployments`))[0].n;
    const res = await other.client.post('/v2/deployments', {
      name: `d-${randomUUID().slice(0, 8)}`,
      source: 'internal_source',
      source_config: { deployment_type: 'dev', custom_url: `https://${name}` },
      source_revision_config: {},
    });
    expect(res.status).toBe(409);
    expect((await api.dataSource.query(`SELECT count(*)::int AS n FROM deployments`))[0].n).toBe(before);
    const b = await deployment(other.client);
    expect(
      (await other.client.patch(`/v2/deployments/${b.id}`, { source_config: { custom_url: `https://${name}` } }))
        .status,
    ).toBe(409);
  });

  it('a custom_url whose host cannot be a domain (an IP address) is kept and claims nothing', async () => {
    const d = await deployment(api.http, { custom_url: 'http://10.1.2.3:8000' });
    expect(await domains(d.id)).toEqual([]);
    expect((await api.http.get(`/v2/deployments/${d.id}`)).body.source_config.custom_url).toBe('http://10.1.2.3:8000');
  });
});

describe('events', () => {
  it('a state change is a domain.state_changed event of the deployment', async () => {
    const d = await deployment();
    const name = host();
    await api.http.post(`/v2/deployments/${d.id}/domains`, { host: name });
    // What the edge does once the TXT record is found.
    await api.dataSource.query(`UPDATE deployment_domains SET verified_at = now(), state = 'active' WHERE host = $1`, [
      name,
    ]);
    const events = (await api.http.get(`/v2/events?deployment_id=${d.id}&types=domain.state_changed`)).body.resources;
    expect(events).toEqual([
      expect.objectContaining({
        type: 'domain.state_changed',
        deployment_id: d.id,
        data: { host: name, from: 'pending_verification', to: 'active', error: null },
      }),
    ]);
  });
});
