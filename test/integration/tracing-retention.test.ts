import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@slipway/logging';
import { Retention } from '@slipway/pipeline';
import { otherWorkspaceClient } from '../support/fixtures.js';
import type { HttpClient } from '../support/http.js';
import { langsmithClient, sendTrace } from '../support/langsmith.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Tracing retention (docs/tracing.md, Retention), run as the `retention.prune` job runs it. Time
 * is moved by writing runs that started days ago (the ingest takes up to 31 days back): a day
 * wholly past the longest window in force is dropped as whole partitions; a workspace with a
 * shorter window loses its older rows from the partitions kept; trace summaries and held updates
 * past their window go; everything recent stays. And a day dropped can be written again.
 */
const DAY = 24 * 3600_000;
let api: TestApi;
let orgAdmin: HttpClient;
let retention: Retention;

beforeAll(async () => {
  api = await startTestApi({ SLIPWAY_RATE_LIMIT_PER_KEY: '100000' });
  orgAdmin = api.http.as(await api.mintKey({ scope: 'organization', workspaceId: null, role: 'admin' }));
  retention = new Retention(
    api.dataSource,
    api.config,
    createLogger({ name: 'tracing-retention-test', level: 'silent' }),
  );
});
afterAll(async () => {
  await api?.close();
});

const ago = (days: number) => new Date(Date.now() - days * DAY);
const partition = (table: string, at: Date) => `${table}_p${at.toISOString().slice(0, 10).replaceAll('-', '')}`;
const exists = async (name: string) =>
  (await api.dataSource.query(`SELECT to_regclass($1) IS NOT NULL AS ok`, [name]))[0].ok as boolean;
const children = async (table: string): Promise<string[]> =>
  (
    await api.dataSource.query(
      `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass`,
      [table],
    )
  ).map((r: { relname: string }) => r.relname);
/** Rows of the trace's two runs in the runs and payloads tables (4 when all there). */
const runsOf = async ({ traceId, childId }: { traceId: string; childId: string }) => {
  const [row] = await api.dataSource.query(
    `SELECT (SELECT count(*) FROM tracing_runs WHERE id = ANY($1::uuid[])) + (SELECT count(*) ` +
      `FROM tracing_run_payloads WHERE run_id = ANY($1::uuid[])) AS n`,
    [[traceId, childId]],
  );
  return Number(row.n);
};
const summaryOf = async (traceId: string) =>
  (await api.dataSource.query(`SELECT count(*) AS n FROM tracing_traces WHERE trace_id = $1`, [traceId]))[0].n === '1';

async function workspaceWithWindow(days: number) {
  const ws = await otherWorkspaceClient(api, `traces-${randomUUID().slice(0, 8)}`);
  const res = await orgAdmin.put(`/v2/workspaces/${ws.workspaceId}/quotas`, { trace_retention_days: days });
  expect(res.status).toBe(200);
  expect(res.body.quotas.trace_retention_days).toBe(days);
  return { ...ws, http: ws.client, client: langsmithClient(api.baseUrl, ws.key) };
}

describe('tracing retention', () => {
  it('drops days past every window whole, trims shorter windows within the days kept, and keeps recent traces', async () => {
    expect(api.config.quotas.traceRetentionDays).toBe(14);
    expect((await api.http.get(`/v2/workspaces/${api.workspaceId}/quotas`)).body.quotas.trace_retention_days).toBe(14);
    const a = langsmithClient(api.baseUrl, api.adminKey); // the default window, 14 days
    const b = await workspaceWithWindow(3);

    const a20 = await sendTrace(a, 'kept-long', { start: ago(20) });
    const a10 = await sendTrace(a, 'kept-long', { start: ago(10) });
    const a5 = await sendTrace(a, 'kept-long', { start: ago(5) });
    const b5 = await sendTrace(b.client, 'kept-short', { start: ago(5) });
    const b1 = await sendTrace(b.client, 'kept-short', { start: ago(1) });
    for (const t of [a20, a10, a5, b5, b1]) expect(await runsOf(t)).toBe(4);
    // An update held 20 days for a create that never came, and one held since now.
    const [staleHeld, freshHeld] = [randomUUID(), randomUUID()];
    await api.dataSource.query(
      `INSERT INTO tracing_pending_updates (workspace_id, run_id, patch, received_at) VALUES ($1, $2, '{}', ` +
        `now() - interval '20 days'), ($1, $3, '{}', now())`,
      [api.workspaceId, staleHeld, freshHeld],
    );
    const old = [partition('tracing_runs', ago(20)), partition('tracing_run_payloads', ago(20))];
    for (const name of old) expect(await exists(name)).toBe(true);

    const { traces } = await retention.run();

    expect(traces.partitionsDropped.sort()).toEqual([...old].sort());
    for (const name of old) expect(await exists(name)).toBe(false);
    expect(await children('tracing_runs')).not.toContain(old[0]);
    expect(await children('tracing_run_payloads')).not.toContain(old[1]);
    for (const at of [ago(10), ago(5), ago(1), ago(0)]) expect(await exists(partition('tracing_runs', at))).toBe(true);
    // Workspace b's 5-day-old trace went row by row, from its partition only: 2 runs, 2 payloads.
    expect(traces.rowsDeleted).toBe(4);
    expect(await runsOf(b5)).toBe(0);
    expect(await summaryOf(b5.traceId)).toBe(false);
    expect(await summaryOf(a20.traceId)).toBe(false);
    for (const t of [a10, a5, b1]) {
      expect(await runsOf(t)).toBe(4);
      expect(await summaryOf(t.traceId)).toBe(true);
    }
    expect(traces.tracesDeleted).toBe(2);
    const held = (
      await api.dataSource.query(`SELECT run_id FROM tracing_pending_updates WHERE run_id = ANY($1::uuid[])`, [
        [staleHeld, freshHeld],
      ])
    ).map((r: { run_id: string }) => r.run_id);
    expect(held).toEqual([freshHeld]);
    // Reads go on over the partitions left.
    expect((await api.http.get(`/api/v1/runs/${a10.traceId}`)).status).toBe(200);
    expect((await b.http.get(`/api/v1/runs/${b5.traceId}`)).status).toBe(404);

    // A second pass finds nothing more to do.
    expect((await retention.run()).traces).toEqual({
      partitionsDropped: [],
      daysPostponed: [],
      rowsDeleted: 0,
      tracesDeleted: 0,
      pendingUpdatesDeleted: 0,
    });
  });

  it(
    'keeps a day a longer override still needs, deleting only the rows of shorter windows; ' +
      'a dropped day can be written again',
    async () => {
      const a = langsmithClient(api.baseUrl, api.adminKey);
      const c = await workspaceWithWindow(25);
      // The 20-day-old partitions were dropped above: this api process remembered them made, and
      // the write makes them again.
      const a20 = await sendTrace(a, 'again', { start: ago(20) });
      const c20 = await sendTrace(c.client, 'long', { start: ago(20) });
      const a28 = await sendTrace(a, 'again', { start: ago(28) });
      for (const t of [a20, c20, a28]) expect(await runsOf(t)).toBe(4);

      const { traces } = await retention.run();

      expect(traces.partitionsDropped.sort()).toEqual([
        partition('tracing_run_payloads', ago(28)),
        partition('tracing_runs', ago(28)),
      ]);
      expect(await exists(partition('tracing_runs', ago(20)))).toBe(true);
      expect(await runsOf(a20)).toBe(0);
      expect(await summaryOf(a20.traceId)).toBe(false);
      expect(await runsOf(c20)).toBe(4);
      expect(await summaryOf(c20.traceId)).toBe(true);
      expect(await summaryOf(a28.traceId)).toBe(false);
    },
  );
});
