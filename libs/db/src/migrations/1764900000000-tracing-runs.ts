import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tracing runs (issue 34): the LangSmith-compatible store owned by @slipway/tracing.
 *
 * - `tracing_runs` holds one row per run with its promoted, filterable columns, and
 *   `tracing_run_payloads` its large fields (inputs, outputs, events, serialized, extra), apart so
 *   a list never reads them. Both are range-partitioned by `start_time`, one partition per UTC day,
 *   created by the writer ahead of the rows that need them (`tracing_runs_pYYYYMMDD`); retention
 *   drops whole partitions. Run ids are the client's: every key starts with the workspace, so one
 *   workspace's ids can never meet another's.
 * - `tracing_pending_updates` keeps an update that arrived before its run's create, until the
 *   create comes and absorbs it.
 * - `tracing_traces` is the summary row per trace, recomputed from its runs on every write.
 *
 * `dotted_order` sorts a trace's runs in tree order only in byte order: COLLATE "C".
 */
export class TracingRuns1764900000000 implements MigrationInterface {
  name = 'TracingRuns1764900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE tracing_runs (
        workspace_id       uuid NOT NULL,
        id                 uuid NOT NULL,
        start_time         timestamptz NOT NULL,
        project_id         uuid NOT NULL REFERENCES tracing_projects(id) ON DELETE CASCADE,
        trace_id           uuid NOT NULL,
        parent_run_id      uuid,
        dotted_order       text COLLATE "C" NOT NULL,
        run_type           text NOT NULL,
        name               text NOT NULL,
        status             text NOT NULL CHECK (status IN ('success', 'error', 'pending')),
        error              text,
        end_time           timestamptz,
        first_token_time   timestamptz,
        prompt_tokens      bigint,
        completion_tokens  bigint,
        total_tokens       bigint,
        model              text,
        thread_id          text,
        revision_id        text,
        run_id             text,
        assistant_id       text,
        checkpoint_id      text,
        reference_example_id uuid,
        tags               text[] NOT NULL DEFAULT '{}',
        metadata           jsonb,
        truncated_fields   text[] NOT NULL DEFAULT '{}',
        received_at        timestamptz NOT NULL DEFAULT now(),
        updated_at         timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workspace_id, id, start_time)
      ) PARTITION BY RANGE (start_time)`);
    // The run list of a project, newest first; a trace's runs in tree order; children of a run.
    await q.query(`CREATE INDEX tracing_runs_project_start_idx ON tracing_runs (project_id, start_time DESC, id)`);
    await q.query(`CREATE INDEX tracing_runs_trace_idx ON tracing_runs (workspace_id, trace_id, dotted_order)`);
    await q.query(
      `CREATE INDEX tracing_runs_parent_idx ON tracing_runs (workspace_id, parent_run_id) WHERE parent_run_id IS NOT NULL`,
    );

    await q.query(`
      CREATE TABLE tracing_run_payloads (
        workspace_id  uuid NOT NULL,
        run_id        uuid NOT NULL,
        start_time    timestamptz NOT NULL,
        project_id    uuid NOT NULL REFERENCES tracing_projects(id) ON DELETE CASCADE,
        inputs        jsonb,
        outputs       jsonb,
        events        jsonb,
        serialized    jsonb,
        extra         jsonb,
        PRIMARY KEY (workspace_id, run_id, start_time)
      ) PARTITION BY RANGE (start_time)`);
    await q.query(`CREATE INDEX tracing_run_payloads_project_idx ON tracing_run_payloads (project_id)`);

    await q.query(`
      CREATE TABLE tracing_pending_updates (
        workspace_id  uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        run_id        uuid NOT NULL,
        patch         jsonb NOT NULL,
        received_at   timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workspace_id, run_id)
      )`);

    await q.query(`
      CREATE TABLE tracing_traces (
        workspace_id       uuid NOT NULL,
        trace_id           uuid NOT NULL,
        project_id         uuid NOT NULL REFERENCES tracing_projects(id) ON DELETE CASCADE,
        root_run_id        uuid,
        name               text,
        start_time         timestamptz NOT NULL,
        end_time           timestamptz,
        status             text NOT NULL,
        run_count          integer NOT NULL,
        error_count        integer NOT NULL,
        prompt_tokens      bigint NOT NULL,
        completion_tokens  bigint NOT NULL,
        total_tokens       bigint NOT NULL,
        updated_at         timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workspace_id, trace_id)
      )`);
    await q.query(`CREATE INDEX tracing_traces_project_start_idx ON tracing_traces (project_id, start_time DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE tracing_traces`);
    await q.query(`DROP TABLE tracing_pending_updates`);
    await q.query(`DROP TABLE tracing_run_payloads`);
    await q.query(`DROP TABLE tracing_runs`);
  }
}
