import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RouteSpec } from '@slipway/api/app';
import { RevisionLogWriter } from '@slipway/pipeline';
import { createListener } from '../support/fixtures.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Bytes Postgres cannot store (issue 8 item 1, docs/api.md, Errors): U+0000 and unpaired surrogates
 * in any part of a request get a 422 naming the field and write nothing; a value that slips
 * past validation is still a 422, never a 500; text the workers store (log lines, status
 * messages) is made storable instead of blocking them. Real Postgres throughout.
 */

const NUL = '\u0000';
const LONE_HIGH = '\ud800';
const LONE_LOW = '\udc00';
const unsupported = (...loc: Array<string | number>) => ({
  loc,
  msg: 'String should not contain U+0000 or an unpaired UTF-16 surrogate',
  type: 'string_unsupported_character',
});

/** Routes that hand a value straight to Postgres, past any schema: the safety net's only guard. */
const netRoutes: RouteSpec[] = [
  {
    method: 'post',
    path: '/test/echo-text',
    operationId: 'testEchoText',
    summary: 'test only',
    tag: 'Test',
    auth: 'none',
    hidden: true,
    responses: { 200: { description: 'echo' } },
    handler: async (ctx) => {
      const { sql, value, appendNul } = ctx.body as { sql: string; value: string; appendNul: boolean };
      const [row] = await api.dataSource.query(`SELECT $1::${sql} AS v`, [appendNul ? value + NUL : value]);
      return { status: 200, body: row };
    },
  },
];

let api: TestApi;
let listenerId: string;

beforeAll(async () => {
  api = await startTestApi({}, { extraRoutes: netRoutes });
  listenerId = await createListener(api, 'bytes');
});
afterAll(async () => {
  await api?.close();
});

const count = async (table: string) =>
  (await api.dataSource.query(`SELECT count(*)::int AS n FROM ${table}`))[0].n as number;

describe('request validation refuses unstorable strings (422 string_unsupported_character)', () => {
  it('in a body value, with every other problem of the request, writing nothing', async () => {
    const before = await count('listeners');
    for (const bad of [`a${NUL}b`, `x${LONE_HIGH}`, `${LONE_LOW}y`, `${LONE_LOW}${LONE_HIGH}`]) {
      const res = await api.http.post('/v2/listeners', {
        compute_type: 'nope',
        compute_id: bad,
        compute_config: { k8s_namespaces: null },
      });
      expect(res.status, JSON.stringify(bad)).toBe(422);
      expect(res.body.detail).toEqual([
        unsupported('body', 'compute_id'),
        expect.objectContaining({ loc: ['body', 'compute_type'], type: 'enum' }),
      ]);
    }
    expect(await count('listeners')).toBe(before);
  });

  it('accepts a well-formed surrogate pair and other unusual but storable text', async () => {
    const id = `emoji-😀-ü-\u200b-\u202e-${randomUUID()}`;
    const res = await api.http.post('/v2/listeners', {
      compute_type: 'k8s',
      compute_id: id,
      compute_config: { k8s_namespaces: null },
    });
    expect(res.status).toBe(201);
    expect(res.body.compute_id).toBe(id);
    const [row] = await api.dataSource.query(`SELECT compute_id FROM listeners WHERE id = $1`, [res.body.id]);
    expect(row.compute_id).toBe(id);
  });

  it('in keys and values at any depth of free-form objects (resource_spec), and in fields no schema knows', async () => {
    const before = await count('revisions');
    const res = await api.http.patch(`/v2/deployments/${randomUUID()}`, {
      source_config: {
        resource_spec: {
          labels: { [`team${NUL}`]: 'a', ok: `b${LONE_HIGH}` },
          volumes: [{ name: 'cfg', configMap: { items: [{ key: `k${NUL}`, path: 'p' }], [`odd${LONE_LOW}`]: 1 } }],
        },
      },
      [`unknown${NUL}`]: true,
      tracked_packages: [[`deep${NUL}`]],
    });
    expect(res.status).toBe(422);
    const locs = res.body.detail.map((d: any) => d.loc);
    expect(res.body.detail.every((d: any) => d.type === 'string_unsupported_character')).toBe(true);
    expect(locs).toEqual(
      expect.arrayContaining([
        ['body', 'source_config', 'resource_spec', 'labels', `team${NUL}`],
        ['body', 'source_config', 'resource_spec', 'labels', 'ok'],
        ['body', 'source_config', 'resource_spec', 'volumes', 0, 'configMap', 'items', 0, 'key'],
        ['body', 'source_config', 'resource_spec', 'volumes', 0, 'configMap', `odd${LONE_LOW}`],
        ['body', `unknown${NUL}`],
        ['body', 'tracked_packages', 0, 0],
      ]),
    );
    expect(locs).toHaveLength(6);
    expect(await count('revisions')).toBe(before);
  });

  it('in query parameters', async () => {
    for (const [query, name] of [
      ['name_contains=%00', 'name_contains'],
      ['name=a%00b&limit=5', 'name'],
      ['image_version=%00', 'image_version'],
    ]) {
      const res = await api.http.get(`/v2/deployments?${query}`);
      expect(res.status, query).toBe(422);
      expect(res.body).toEqual({ detail: [unsupported('query', name!)] });
    }
    // Log search text goes to an ILIKE: the same rule.
    const logs = await api.http.get(`/v2/deployments/${randomUUID()}/revisions/${randomUUID()}/logs?query=%00`);
    expect(logs.status).toBe(422);
    expect(logs.body.detail).toContainEqual(unsupported('query', 'query'));
  });

  it('in path parameters, including percent-encodings that decode to no character', async () => {
    const nul = await api.http.get('/v2/deployments/%00');
    expect(nul.status).toBe(422);
    expect(nul.body).toEqual({ detail: [unsupported('path', 'deployment_id')] });
    for (const segment of ['%ED%A0%80', '%C0%80', '%', '%E0%A4%A']) {
      const res = await api.http.get(`/v2/listeners/${segment}`);
      expect(res.status, segment).toBe(422);
      expect(res.body).toEqual({ detail: [unsupported('path')] });
    }
  });

  it('refuses values nested deeper than any real request, without overflowing anything', async () => {
    // Built as text: JSON.stringify itself would overflow on these.
    const deep = `{"source_config":{"resource_spec":{"labels":${'{"a":'.repeat(5_000)}"bottom"${'}'.repeat(5_000)}}}}`;
    const res = await api.http.request('PATCH', `/v2/deployments/${randomUUID()}`, { rawBody: deep });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      {
        loc: ['body', 'source_config', 'resource_spec', 'labels', ...Array(29).fill('a')],
        msg: 'Value should not be nested more than 32 levels deep',
        type: 'too_deep',
      },
    ]);
    const arrays = await api.http.request('POST', '/v2/listeners', {
      rawBody: '['.repeat(200_000) + ']'.repeat(200_000),
    });
    expect(arrays.status).toBe(422);
    expect((await api.http.get('/readyz')).status).toBe(200);
  });
});

describe('safety net: a value Postgres refuses is a 422, never a 500', () => {
  it.each([
    // The handler itself appends a NUL: the request had none for the guard to see.
    ['text', 'made by a handler', true, 'string_unsupported_character'],
    // JSON text with an escaped NUL: no NUL character in the request, but jsonb refuses it.
    ['jsonb', JSON.stringify({ a: `x${NUL}` }), false, 'string_unsupported_character'],
    ['uuid', 'not-a-uuid', false, 'value_error'],
    ['int', '99999999999', false, 'value_error'],
  ])('%s ← %j', async (sql, value, appendNul, type) => {
    const res = await api.http.post('/test/echo-text', { sql, value, appendNul }, { key: null });
    expect(res.status, res.text).toBe(422);
    expect(res.body).toEqual({ detail: [{ loc: ['body'], msg: expect.any(String), type }] });
    expect(res.text).not.toMatch(/invalid input syntax|Unicode escape|out of range for type|QueryFailedError|SELECT/);
    expect((await api.http.get('/readyz')).status).toBe(200);
  });

  it('logs each as an error for the operator', () => {
    const lines = api.logs.lines().filter((l: any) => l.msg === 'the database refused a value that passed validation');
    expect(lines).toHaveLength(4);
    expect(lines.every((l: any) => l.level === 'error')).toBe(true);
  });
});

describe('worker-side text is made storable, never lost', () => {
  async function revision(): Promise<string> {
    const res = await api.http.post('/v2/deployments', {
      name: `bytes-${randomUUID().slice(0, 8)}`,
      source: 'external_container',
      source_config: { listener_id: listenerId },
      source_revision_config: { image_uri: 'registry.example/a:1' },
    });
    expect(res.status, res.text).toBe(201);
    return res.body.latest_revision_id;
  }
  const logRows = async (revisionId: string) =>
    (await api.dataSource.query(`SELECT level, message FROM revision_logs WHERE revision_id = $1 ORDER BY id`, [
      revisionId,
    ])) as Array<{
      level: string;
      message: string;
    }>;

  it('stores an app line holding NUL or a lone surrogate sanitised, with the rest of its batch', async () => {
    const revisionId = await revision();
    const writer = new RevisionLogWriter(api.dataSource, revisionId, 'deploy', ['hunter2']);
    writer.write(`starting\nbinary ${NUL}${NUL} junk\nhalf an emoji ${LONE_HIGH}!\npassword hunter2\n`);
    writer.write(Buffer.from([0x6f, 0x6b, 0x00, 0x0a]));
    writer.line('done', `in${NUL}fo`);
    await writer.close();
    expect(await logRows(revisionId)).toEqual([
      { level: 'info', message: 'starting' },
      { level: 'info', message: 'binary \uFFFD\uFFFD junk' },
      { level: 'info', message: 'half an emoji \uFFFD!' },
      { level: 'info', message: 'password ********' },
      { level: 'info', message: 'ok\uFFFD' },
      { level: 'in\uFFFDfo', message: 'done' },
    ]);
    // And it is readable through the API.
    const [{ deployment_id }] = await api.dataSource.query(`SELECT deployment_id FROM revisions WHERE id = $1`, [
      revisionId,
    ]);
    const res = await api.http.get(
      `/v2/deployments/${deployment_id}/revisions/${revisionId}/logs?type=deploy&order=asc`,
    );
    expect(res.status).toBe(200);
    expect(res.body.logs.map((l: any) => l.message)).toContain('binary \uFFFD\uFFFD junk');
  });

  it('drops only a line Postgres refuses for its content, keeps the others and says so', async () => {
    const revisionId = await revision();
    // Stands for any content rule of the store the writer cannot know about: refuse one line.
    await api.dataSource.query(`
      CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.message = 'poison' THEN RAISE EXCEPTION 'refused' USING ERRCODE = '22P05'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_poison BEFORE INSERT ON revision_logs FOR EACH ROW EXECUTE FUNCTION refuse_poison();`);
    try {
      const writer = new RevisionLogWriter(api.dataSource, revisionId, 'build');
      writer.write('one\npoison\nthree\n');
      await writer.close();
      writer.line('four');
      await writer.close();
      expect((await logRows(revisionId)).map((r) => r.message)).toEqual([
        'one',
        'three',
        '[1 log line could not be stored]',
        'four',
      ]);
    } finally {
      await api.dataSource.query(`DROP TRIGGER refuse_poison ON revision_logs; DROP FUNCTION refuse_poison();`);
    }
  });

  it('gives up on lines whose revision is gone instead of retrying them forever', async () => {
    const writer = new RevisionLogWriter(api.dataSource, randomUUID(), 'deploy');
    writer.write('orphan one\norphan two\n');
    await writer.close();
    // Nothing left pending: no flush comes back to try again (one would within 250 ms).
    const query = vi.spyOn(api.dataSource.manager, 'query');
    try {
      await new Promise((r) => setTimeout(r, 700));
      expect(query).not.toHaveBeenCalled();
    } finally {
      query.mockRestore();
    }
  });

  it('applies a transition whose status message holds NUL or a lone surrogate, storing it sanitised', async () => {
    const revisionId = await revision();
    const applied = await api.dataSource.transaction((m) =>
      api.flow.transition(m, revisionId, 'INTERRUPTED', {
        message: `app said: ${NUL}oops${LONE_LOW}`,
        set: { revisionConfig: { note: `x${NUL}`, [`k${LONE_HIGH}`]: 1 } },
      }),
    );
    expect(applied).toMatchObject({ revisionId, to: 'INTERRUPTED' });
    const [row] = await api.dataSource.query(
      `SELECT status, status_message, source_revision_config FROM revisions WHERE id = $1`,
      [revisionId],
    );
    expect(row.status).toBe('INTERRUPTED');
    expect(row.status_message).toBe('app said: \uFFFDoops\uFFFD');
    expect(row.source_revision_config).toMatchObject({ note: 'x\uFFFD', 'k\uFFFD': 1 });
    const [event] = await api.dataSource.query(
      `SELECT message FROM revision_events WHERE revision_id = $1 AND to_status = 'INTERRUPTED'`,
      [revisionId],
    );
    expect(event.message).toBe('app said: \uFFFDoops\uFFFD');
  });
});
