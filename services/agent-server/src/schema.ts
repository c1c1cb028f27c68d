// The agent server's own tables in the deployment database: one row per assistant, assistant
// version, thread, run and cron. Set up (and migrated) by every instance at start, under the advisory
// lock the host takes for all its schema work, so instances starting together take turns.
import type { PoolClient } from 'pg';

/** Each step runs once, in order, in one transaction with the version bump. */
const MIGRATIONS: string[] = [
  `CREATE TABLE slipway_agent_assistants (
     assistant_id text PRIMARY KEY,
     graph_id text NOT NULL,
     name text NOT NULL,
     description text,
     config jsonb NOT NULL DEFAULT '{}',
     context jsonb,
     metadata jsonb NOT NULL DEFAULT '{}',
     version integer NOT NULL DEFAULT 1,
     created_at timestamptz NOT NULL DEFAULT now(),
     updated_at timestamptz NOT NULL DEFAULT now());
   CREATE INDEX slipway_agent_assistants_metadata ON slipway_agent_assistants USING gin (metadata jsonb_path_ops);
   CREATE INDEX slipway_agent_assistants_created ON slipway_agent_assistants (created_at, assistant_id);
   CREATE TABLE slipway_agent_assistant_versions (
     assistant_id text NOT NULL REFERENCES slipway_agent_assistants ON DELETE CASCADE,
     version integer NOT NULL,
     graph_id text NOT NULL,
     name text NOT NULL,
     description text,
     config jsonb NOT NULL DEFAULT '{}',
     context jsonb,
     metadata jsonb NOT NULL DEFAULT '{}',
     created_at timestamptz NOT NULL DEFAULT now(),
     PRIMARY KEY (assistant_id, version));
   CREATE TABLE slipway_agent_threads (
     thread_id text PRIMARY KEY,
     status text NOT NULL DEFAULT 'idle',
     metadata jsonb NOT NULL DEFAULT '{}',
     config jsonb NOT NULL DEFAULT '{}',
     "values" jsonb,
     interrupts jsonb,
     created_at timestamptz NOT NULL DEFAULT now(),
     updated_at timestamptz NOT NULL DEFAULT now());
   CREATE INDEX slipway_agent_threads_metadata ON slipway_agent_threads USING gin (metadata jsonb_path_ops);
   CREATE INDEX slipway_agent_threads_created ON slipway_agent_threads (created_at, thread_id);
   CREATE INDEX slipway_agent_threads_updated ON slipway_agent_threads (updated_at, thread_id);
   CREATE INDEX slipway_agent_threads_status ON slipway_agent_threads (status, created_at, thread_id);
   CREATE TABLE slipway_agent_runs (
     run_id text PRIMARY KEY,
     thread_id text NOT NULL REFERENCES slipway_agent_threads ON DELETE CASCADE,
     assistant_id text NOT NULL,
     status text NOT NULL,
     metadata jsonb NOT NULL DEFAULT '{}',
     kwargs jsonb NOT NULL DEFAULT '{}',
     multitask_strategy text NOT NULL DEFAULT 'reject',
     created_at timestamptz NOT NULL DEFAULT now(),
     updated_at timestamptz NOT NULL DEFAULT now(),
     -- the queue: the code that created it (see slipway_agent_instances), its try (1 + the
     -- leases that lapsed under it), who runs it and the lease that fences its writes
     code text,
     attempt integer NOT NULL DEFAULT 1,
     worker text,
     lease_token uuid,
     lease_expires_at timestamptz);
   -- One running run per thread, whatever the number of instances and workers.
   CREATE UNIQUE INDEX slipway_agent_runs_one_running ON slipway_agent_runs (thread_id) WHERE status = 'running';
   CREATE INDEX slipway_agent_runs_thread ON slipway_agent_runs (thread_id, created_at, run_id);
   CREATE INDEX slipway_agent_runs_pending ON slipway_agent_runs (created_at) WHERE status = 'pending';
   CREATE INDEX slipway_agent_runs_leases ON slipway_agent_runs (lease_expires_at) WHERE status = 'running';
   CREATE INDEX slipway_agent_runs_assistant ON slipway_agent_runs (assistant_id);
   CREATE INDEX slipway_agent_runs_metadata ON slipway_agent_runs USING gin (metadata jsonb_path_ops);
   -- Live instances and the code they run: a run waits for an instance of the code it was created
   -- with while one serves (a rollout's old instances do not take runs made through new ones).
   CREATE TABLE slipway_agent_instances (
     instance_id text PRIMARY KEY,
     code text NOT NULL,
     draining boolean NOT NULL DEFAULT false,
     started_at timestamptz NOT NULL DEFAULT now(),
     seen_at timestamptz NOT NULL DEFAULT now());`,
  // Crons: a thread cron (thread_id set) adds a run to its thread at each tick; a stateless one
  // (thread_id NULL) runs on a new thread, deleted after the run unless on_run_completed = 'keep'.
  // The scheduler of every instance claims due rows (next_run_date <= now(), FOR UPDATE SKIP LOCKED)
  // and moves next_run_date in the transaction that creates the run: one run per tick.
  `CREATE TABLE slipway_agent_crons (
     cron_id text PRIMARY KEY,
     assistant_id text NOT NULL REFERENCES slipway_agent_assistants ON DELETE CASCADE,
     thread_id text REFERENCES slipway_agent_threads ON DELETE CASCADE,
     user_id text,
     schedule text NOT NULL,
     timezone text,
     payload jsonb NOT NULL DEFAULT '{}',
     metadata jsonb NOT NULL DEFAULT '{}',
     on_run_completed text CHECK (on_run_completed IN ('delete', 'keep')),
     enabled boolean NOT NULL DEFAULT true,
     end_time timestamptz,
     next_run_date timestamptz,
     created_at timestamptz NOT NULL DEFAULT now(),
     updated_at timestamptz NOT NULL DEFAULT now());
   CREATE INDEX slipway_agent_crons_due ON slipway_agent_crons (next_run_date) WHERE enabled;
   CREATE INDEX slipway_agent_crons_thread ON slipway_agent_crons (thread_id);
   CREATE INDEX slipway_agent_crons_assistant ON slipway_agent_crons (assistant_id);
   CREATE INDEX slipway_agent_crons_created ON slipway_agent_crons (created_at, cron_id);
   CREATE INDEX slipway_agent_crons_metadata ON slipway_agent_crons USING gin (metadata jsonb_path_ops);`,
  // The creator of a cron as the custom auth handler named them ({user, scopes}): each tick's run
  // carries that identity (config.configurable.langgraph_auth_user), as the creator's own runs do.
  `ALTER TABLE slipway_agent_crons ADD COLUMN auth jsonb;`,
];

/** Creates or migrates the tables; the caller holds the schema lock. Returns the number of steps applied. */
export async function migrate(client: PoolClient): Promise<number> {
  await client.query(
    `CREATE TABLE IF NOT EXISTS slipway_agent_schema ` +
      `(one boolean PRIMARY KEY DEFAULT true CHECK (one), version integer NOT NULL);
                      INSERT INTO slipway_agent_schema (version) VALUES (0) ON CONFLICT DO NOTHING`,
  );
  const { rows } = await client.query<{ version: number }>('SELECT version FROM slipway_agent_schema');
  const from = rows[0]!.version;
  for (let step = from; step < MIGRATIONS.length; step++) {
    await client.query('BEGIN');
    try {
      await client.query(MIGRATIONS[step]!);
      await client.query('UPDATE slipway_agent_schema SET version = $1', [step + 1]);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK');
      throw err;
    }
  }
  return MIGRATIONS.length - from;
}
