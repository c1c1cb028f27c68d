import { randomBytes } from 'node:crypto';
import {
  createDatabaseIfMissing,
  createDataSource,
  dropDatabaseIfExists,
  runMigrations,
  type DataSource,
} from '@slipway/db';
import { RunRepository, TraceRepository, TracingReads } from '@slipway/tracing';
import {
  BATCH,
  batch,
  BOUNDARY,
  MODEL,
  multipartBody,
  TRACE_RUNS,
  traceRuns,
  type GeneratedRun,
} from '../support/generated-runs.js';
import { percentile, timeInterleaved } from '../support/measure.js';
import { atLeast, atMost, type BenchRow } from '../support/report.js';
import { databaseUrl, SERVER, type BenchStack } from '../support/stack.js';
import type { BenchOptions } from './options.js';

/** Requests in flight at once, as a few busy agent instances send them. */
const SENDERS = 4;
const DAY_MS = 24 * 3600_000;

/** A database of its own, migrated, with a workspace (dropped by `drop`). */
interface Scratch {
  dataSource: DataSource;
  workspaceId: string;
  project: (name: string) => Promise<string>;
  drop: () => Promise<void>;
}

async function scratch(kind: string, poolSize: number): Promise<Scratch> {
  const name = `slipway_bench_${kind}_${randomBytes(3).toString('hex')}`;
  await createDatabaseIfMissing(SERVER, name);
  const dataSource = createDataSource({ url: databaseUrl(name), poolSize, applicationName: 'slipway-bench' });
  const drop = async () => {
    if (dataSource.isInitialized) await dataSource.destroy().catch(() => {});
    await dropDatabaseIfExists(SERVER, name);
  };
  try {
    await dataSource.initialize();
    await runMigrations(dataSource);
    const q = (sql: string, params: unknown[] = []) => dataSource.query(sql, params);
    const [{ id: org }] = await q(
      `INSERT INTO organizations (id, name) VALUES (gen_random_uuid(), 'bench') RETURNING id`,
    );
    const [{ id: workspaceId }] = await q(
      `INSERT INTO workspaces (id, organization_id, name) VALUES (gen_random_uuid(), $1, 'bench') RETURNING id`,
      [org],
    );
    const project = async (projectName: string) =>
      (
        await q(
          `INSERT INTO tracing_projects (id, workspace_id, name) VALUES (gen_random_uuid(), $1, $2) RETURNING id`,
          [workspaceId, projectName],
        )
      )[0].id as string;
    return { dataSource, workspaceId, project, drop };
  } catch (err) {
    await drop().catch(() => {});
    throw err;
  }
}

/** The daily partitions of both runs tables from `fromMs` to `toMs`, made as ingest makes them. */
async function ensurePartitions(dataSource: DataSource, fromMs: number, toMs: number): Promise<void> {
  const days: string[] = [];
  for (let d = Math.floor(fromMs / DAY_MS) * DAY_MS; d <= toMs; d += DAY_MS)
    days.push(new Date(d).toISOString().slice(0, 10));
  await dataSource.transaction((m) => new RunRepository(m).ensurePartitions(days));
}

// ---------------------------------------------------------------------------------------------
// Ingest: what a LangGraph agent's langsmith client sends (generated-runs.ts).

const RUN_COLUMN_NAMES =
  'workspace_id, id, start_time, project_id, trace_id, parent_run_id, dotted_order, run_type, name, status, ' +
  'error, end_time, first_token_time, ' +
  'prompt_tokens, completion_tokens, total_tokens, model, thread_id, revision_id, run_id, assistant_id, ' +
  'checkpoint_id, reference_example_id, tags, metadata, truncated_fields';
const placeholders = (rows: number, cols: number) =>
  Array.from(
    { length: rows },
    (_, r) => `(${Array.from({ length: cols }, (_, c) => `$${r * cols + c + 1}`).join(', ')})`,
  ).join(', ');

/** The baseline: the same batch as two bare multi-row INSERTs (runs, payloads) in one transaction. */
async function rawInsert(dataSource: DataSource, runs: GeneratedRun[]): Promise<void> {
  const cols = runs[0]!.row.length;
  const payloads = runs.flatMap(({ row, payload }) => [
    row[0],
    row[1],
    row[2],
    row[3],
    JSON.stringify(payload.inputs),
    JSON.stringify(payload.outputs),
    null,
    null,
    JSON.stringify(payload.extra),
  ]);
  await dataSource.transaction(async (m) => {
    await m.query(
      `INSERT INTO tracing_runs (${RUN_COLUMN_NAMES}) VALUES ${placeholders(runs.length, cols)}`,
      runs.flatMap((r) => r.row),
    );
    await m.query(
      `INSERT INTO tracing_run_payloads (workspace_id, run_id, start_time, project_id, inputs, outputs, events, ` +
        `serialized, extra) VALUES ${placeholders(runs.length, 9)}`,
      payloads,
    );
  });
}

/** `SENDERS` loops sending batches for `sec` seconds; runs/s over the whole time, and each batch's ms. */
async function drive(
  sec: number,
  send: () => Promise<void>,
): Promise<{ runsPerSec: number; latencies: number[]; batches: number }> {
  const latencies: number[] = [];
  const started = performance.now();
  const deadline = started + sec * 1000;
  let failed = false;
  const senders = await Promise.allSettled(
    Array.from({ length: SENDERS }, async () => {
      while (!failed && performance.now() < deadline) {
        const t = performance.now();
        await send().catch((err) => {
          failed = true;
          throw err;
        });
        latencies.push(performance.now() - t);
      }
    }),
  );
  // Every sender stopped before the first failure is thrown (the database is dropped next).
  const failure = senders.find((s) => s.status === 'rejected');
  if (failure) throw failure.reason;
  return {
    runsPerSec: (latencies.length * BATCH) / ((performance.now() - started) / 1000),
    latencies,
    batches: latencies.length,
  };
}

/**
 * Runs written through the api's `POST /api/v1/runs/multipart` (batches of 100 runs: ten whole
 * traces, from `SENDERS` senders at once) against the same rows inserted bare into the same
 * tables of a database of its own, from as many connections.
 */
export async function tracingIngestScenario(stack: BenchStack, o: BenchOptions): Promise<BenchRow[]> {
  const project = `bench-tracing-${stack.id}`;
  const raw = await scratch('tracing_raw', SENDERS);
  try {
    const rawProject = await raw.project(project);
    await ensurePartitions(raw.dataSource, Date.now() - 2 * 3600_000, Date.now() + DAY_MS);
    const rawSend = () => rawInsert(raw.dataSource, batch(project, raw.workspaceId, rawProject));
    if (o.warmupSec) await drive(o.warmupSec, rawSend);
    const baseline = await drive(o.durationSec, rawSend);

    let sent = 0;
    const apiSend = async () => {
      // The workspace and project ids are the api's to decide: the baseline's columns only.
      const body = multipartBody(batch(project, raw.workspaceId, rawProject));
      const res = await fetch(`${stack.api.url}/api/v1/runs/multipart`, {
        method: 'POST',
        headers: { 'x-api-key': stack.key, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
        body,
      });
      const answer = await res.text();
      if (res.status !== 202)
        throw new Error(
          `POST /api/v1/runs/multipart → ${res.status} ${answer.slice(0, 300)}\nthe api's last warnings and ` +
            `errors:\n${stack.api.problems() || '(none)'}`,
        );
      sent += BATCH;
    };
    if (o.warmupSec) await drive(o.warmupSec, apiSend);
    const api = await drive(o.durationSec, apiSend);

    // Every run accepted is stored, with its trace's summary.
    const [stored] = await stack.dataSource.query(
      `SELECT (SELECT count(*)::int FROM tracing_runs r WHERE r.project_id = p.id) AS runs,
              (SELECT count(*)::int FROM tracing_traces t WHERE t.project_id = p.id ` +
        `AND t.run_count = ${TRACE_RUNS} AND t.total_tokens > 0) AS traces
         FROM tracing_projects p WHERE p.name = $1`,
      [project],
    );
    if (stored?.runs !== sent || stored?.traces !== sent / TRACE_RUNS) {
      throw new Error(
        `the api accepted ${sent} runs (${sent / TRACE_RUNS} traces) but stored ${stored?.runs} runs and ${stored?.traces} whole traces`,
      );
    }
    const scenario = `trace ingest (${SENDERS} senders, ${BATCH}-run batches)`;
    const [apiP50, rawP50] = [percentile(api.latencies, 50), percentile(baseline.latencies, 50)];
    return [
      atLeast(scenario, 'throughput', api.runsPerSec, baseline.runsPerSec, 0.3, 'runs/s'),
      { scenario, metric: 'p50 per batch', value: apiP50, unit: 'ms', baseline: rawP50, ratio: apiP50 / rawP50 },
    ];
  } finally {
    await raw.drop();
  }
}

// ---------------------------------------------------------------------------------------------
// Lists: a project's newest traces and root runs, at two project sizes.

/** How far back a project's runs reach (several daily partitions). */
const SPAN_MS = 7 * DAY_MS;

/**
 * `runs` runs of a project as `TRACE_RUNS`-run traces shaped like `traceRuns`'s, evenly spread
 * over the last `SPAN_MS` (newest first: trace 0 is the newest), with small payloads, a failing
 * tool run in one trace of 50, and one summary row per trace.
 */
async function fillProject(
  dataSource: DataSource,
  workspaceId: string,
  projectId: string,
  runs: number,
  newest: Date,
): Promise<void> {
  const stepMs = SPAN_MS / (runs / TRACE_RUNS);
  const seg = (k: string) =>
    `to_char((ts + (${k}) * interval '150 milliseconds') AT TIME ZONE 'UTC', ` +
    `'YYYYMMDD"T"HH24MISSUS') || 'Z' || md5($2::text || ':' || t || ':' || (${k}))::uuid::text`;
  await dataSource.query(
    `INSERT INTO tracing_runs (workspace_id, id, start_time, project_id, trace_id, parent_run_id, dotted_order, ` +
      `run_type, name, status, error, end_time,
                               prompt_tokens, completion_tokens, total_tokens, model, thread_id, revision_id, ` +
      `run_id, assistant_id, tags, metadata)
     SELECT $1::uuid, md5($2::text || ':' || t || ':' || k)::uuid, ts + k * interval '150 milliseconds', ` +
      `$2::uuid, md5($2::text || ':' || t || ':0')::uuid,
            CASE WHEN pk IS NOT NULL THEN md5($2::text || ':' || t || ':' || pk)::uuid END,
            CASE WHEN k = 0 THEN ${seg('0')} WHEN pk = 0 THEN ${seg('0')} || '.' || ${seg('k')} ` +
      `ELSE ${seg('0')} || '.' || ${seg('pk')} || '.' || ${seg('k')} END,
            CASE WHEN k % 3 = 1 OR k = 0 THEN 'chain' WHEN k % 3 = 2 THEN 'llm' ELSE 'tool' END,
            CASE WHEN k = 0 THEN 'LangGraph' WHEN k % 3 = 1 THEN 'node' WHEN k % 3 = 2 THEN 'ChatOpenAI' ELSE 'search' END,
            CASE WHEN k = 3 AND t % 50 = 7 THEN 'error' ELSE 'success' END,
            CASE WHEN k = 3 AND t % 50 = 7 THEN 'tool failed' END,
            ts + k * interval '150 milliseconds' + CASE WHEN k = 0 THEN interval '1600 ms' WHEN k % 3 = 1 ` +
      `THEN interval '400 ms' ELSE interval '100 ms' END,
            CASE WHEN k % 3 = 2 AND k > 0 THEN 200 + t % 500 END, CASE WHEN k % 3 = 2 AND k > 0 THEN 20 + t % 100 END,
            CASE WHEN k % 3 = 2 AND k > 0 THEN 220 + t % 500 + t % 100 END,
            CASE WHEN k % 3 = 2 AND k > 0 THEN '${MODEL}' END,
            'thread-' || t, 'rev-' || (t % 5), 'run-' || t, 'agent', '{}',
            jsonb_build_object('thread_id', 'thread-' || t, 'revision_id', 'rev-' || (t % 5), 'run_id', ` +
      `'run-' || t, 'assistant_id', 'agent')
       FROM (SELECT g / ${TRACE_RUNS} AS t, g % ${TRACE_RUNS} AS k,
                    CASE WHEN g % ${TRACE_RUNS} = 0 THEN NULL WHEN g % ${TRACE_RUNS} % 3 = 1 THEN 0 ` +
      `ELSE g % ${TRACE_RUNS} - ((g % ${TRACE_RUNS} - 1) % 3) END AS pk,
                    $3::timestamptz - (g / ${TRACE_RUNS}) * $4::float8 * interval '1 millisecond' AS ts
               FROM generate_series(0, $5::int - 1) g) x`,
    [workspaceId, projectId, newest, stepMs, runs],
  );
  await dataSource.query(
    `INSERT INTO tracing_run_payloads (workspace_id, run_id, start_time, project_id, inputs, outputs, extra)
     SELECT workspace_id, id, start_time, project_id,
            jsonb_build_object('messages', jsonb_build_array(jsonb_build_object('role', 'user', 'content', ` +
      `'what is the status of ' || thread_id))),
            jsonb_build_object('output', 'done: ' || name || ' of ' || thread_id),
            jsonb_build_object('metadata', metadata)
       FROM tracing_runs WHERE project_id = $1`,
    [projectId],
  );
  await dataSource.query(
    `INSERT INTO tracing_traces (workspace_id, trace_id, project_id, root_run_id, name, start_time, end_time, ` +
      `status, run_count, error_count,
                                 prompt_tokens, completion_tokens, total_tokens, thread_id, revision_id)
     SELECT workspace_id, trace_id, project_id,
            (array_agg(id) FILTER (WHERE parent_run_id IS NULL))[1], (array_agg(name) FILTER (WHERE parent_run_id IS NULL))[1],
            min(start_time), (array_agg(end_time) FILTER (WHERE parent_run_id IS NULL))[1], ` +
      `(array_agg(status) FILTER (WHERE parent_run_id IS NULL))[1],
            count(*), count(*) FILTER (WHERE status = 'error'),
            COALESCE(sum(prompt_tokens), 0), COALESCE(sum(completion_tokens), 0), COALESCE(sum(total_tokens), ` +
      `0), min(thread_id), min(revision_id)
       FROM tracing_runs WHERE project_id = $1
      GROUP BY workspace_id, trace_id, project_id`,
    [projectId],
  );
}

/**
 * p99 of a project's first page of traces (`TraceRepository.listForProject`, the 20 newest) and
 * of its first page of root runs (`POST /api/v1/runs/query` with `session` and `is_root: true`,
 * through `TracingReads.queryRuns`), on a project of many runs vs one of few in the same
 * database (same shape, same time span), timed alternately after a warm-up of each.
 */
export async function tracingListScenario(o: BenchOptions): Promise<BenchRow[]> {
  const [smallRuns, largeRuns] = o.tracingRuns;
  const db = await scratch('tracing_list', 2);
  try {
    const newest = new Date(Date.now() - 60_000);
    await ensurePartitions(db.dataSource, newest.getTime() - SPAN_MS - DAY_MS, newest.getTime() + DAY_MS);
    const small = await db.project('small');
    const large = await db.project('large');
    await fillProject(db.dataSource, db.workspaceId, small, smallRuns, newest);
    await fillProject(db.dataSource, db.workspaceId, large, largeRuns, newest);
    // As autovacuum leaves tables after a load: statistics and the visibility map.
    await db.dataSource.query('VACUUM (ANALYZE) tracing_runs, tracing_run_payloads, tracing_traces');

    const traces = new TraceRepository(db.dataSource.manager);
    const reads = new TracingReads(db.dataSource);
    const listTraces = (project: string) => async () => {
      const page = await traces.listForProject(db.workspaceId, project, { offset: 0, limit: 20 });
      if (page.length !== 20) throw new Error(`listForProject returned ${page.length} traces, not 20`);
    };
    const listRoots = (project: string) => async () => {
      const { runs } = await reads.queryRuns(db.workspaceId, { session: [project], is_root: true, limit: 20 });
      if (runs.length !== 20 || runs.some((r) => r.parent_run_id !== null))
        throw new Error(`runs/query returned ${runs.length} runs, not 20 roots`);
    };
    const label = `p99 ${largeRuns / 1000}k vs ${smallRuns / 1000}k runs`;
    const [ts, tl] = await timeInterleaved([listTraces(small), listTraces(large)], o.tracingListRuns);
    const [rs, rl] = await timeInterleaved([listRoots(small), listRoots(large)], o.tracingListRuns);
    return [
      atMost('trace list: traces (newest 20)', label, tl!.p99, ts!.p99, 2),
      atMost('trace list: root runs (runs/query is_root, 20)', label, rl!.p99, rs!.p99, 2),
    ];
  } finally {
    await db.drop();
  }
}
