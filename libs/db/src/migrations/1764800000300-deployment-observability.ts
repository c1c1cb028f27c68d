import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Runtime observability of cloud-hosted deployments (docs/api.md, Metrics and Logs):
 * - `revision_logs.instance`: which instance (its index) printed a deploy-log line, so a log can
 *   be filtered by instance; null for the rollout's own lines and for build lines.
 * - `deployment_metrics`: a short history (hours) of each deployment's numbers in fixed time
 *   buckets, written by the deployer that serves it and pruned past the retention.
 * - on `runtime_processes`, each instance's latest sample (memory, CPU, health) and its restarts.
 */
export class DeploymentObservability1764800000300 implements MigrationInterface {
  name = 'DeploymentObservability1764800000300';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE revision_logs ADD COLUMN instance smallint`);
    await q.query(`CREATE TABLE deployment_metrics (
      deployment_id        uuid NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
      bucket_at            timestamptz NOT NULL,
      requests             integer NOT NULL DEFAULT 0,
      errors_4xx           integer NOT NULL DEFAULT 0,
      errors_5xx           integer NOT NULL DEFAULT 0,
      latency_p50_ms       real,
      latency_p95_ms       real,
      latency_p99_ms       real,
      cpu_percent          real,
      memory_bytes         bigint,
      restarts             integer NOT NULL DEFAULT 0,
      oom_kills            integer NOT NULL DEFAULT 0,
      runs_started         integer NOT NULL DEFAULT 0,
      runs_succeeded       integer NOT NULL DEFAULT 0,
      runs_failed          integer NOT NULL DEFAULT 0,
      run_duration_p50_ms  real,
      PRIMARY KEY (deployment_id, bucket_at)
    )`);
    await q.query(`CREATE INDEX deployment_metrics_bucket_idx ON deployment_metrics (bucket_at)`);
    await q.query(`ALTER TABLE runtime_processes
      ADD COLUMN restarts integer NOT NULL DEFAULT 0,
      ADD COLUMN memory_bytes bigint,
      ADD COLUMN cpu_percent real,
      ADD COLUMN healthy boolean,
      ADD COLUMN last_health_check_at timestamptz`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runtime_processes
      DROP COLUMN restarts, DROP COLUMN memory_bytes, DROP COLUMN cpu_percent, DROP COLUMN healthy, DROP COLUMN last_health_check_at`);
    await q.query(`DROP TABLE deployment_metrics`);
    await q.query(`ALTER TABLE revision_logs DROP COLUMN instance`);
  }
}
