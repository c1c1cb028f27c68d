import { randomUUID } from 'node:crypto';
import type {
  DeploymentRuntimeWrites,
  InstanceRecord,
  InstanceRole,
  InstanceStatus,
  Queryable,
} from '../instance-types.js';

export type { DeploymentRuntimeWrites, InstanceRecord, InstanceRole, InstanceStatus, Queryable };

/** TypeORM answers `UPDATE … RETURNING` with `[rows, count]` and SELECT with `rows`. */
async function rows<T>(db: Queryable, sql: string, params: unknown[] = []): Promise<T[]> {
  const result: unknown = await db.query(sql, params);
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number')
    return result[0] as T[];
  return result as T[];
}

/** An instance's latest numbers, as the deployer samples them. */
export interface InstanceSample {
  memoryBytes: number | null;
  cpuPercent: number | null;
  /** The last health probe's answer and time; null: none since the last sample. */
  healthy: boolean | null;
  checkedAt: Date | null;
}

interface Row {
  id: string;
  deployment_id: string;
  revision_id: string;
  role: InstanceRole;
  pid: number | null;
  port: number;
  status: InstanceStatus;
  log_path: string;
  address: string | null;
}

const toRecord = (r: Row): InstanceRecord => ({
  id: r.id,
  deploymentId: r.deployment_id,
  revisionId: r.revision_id,
  role: r.role,
  index: Number(/-(\d+)\.log$/.exec(r.log_path)?.[1] ?? 0),
  pid: r.pid,
  port: r.port,
  status: r.status,
  logPath: r.log_path,
  address: r.address,
});

const COLUMNS = 'id, deployment_id, revision_id, role, pid, port, status, log_path, address';

/**
 * The process runtime's bookkeeping in Postgres, so a restarted deployer can re-adopt its
 * processes. Its write of `deployments` (the serving port) goes through `deployments`.
 */
export class ProcessStore {
  constructor(
    private readonly db: Queryable,
    private readonly deployments: DeploymentRuntimeWrites,
  ) {}

  /** Ports recorded as in use: live instances and every deployment's serving port. */
  async takenPorts(): Promise<Set<number>> {
    const found = await rows<{ port: number }>(
      this.db,
      `SELECT port FROM runtime_processes WHERE status <> 'exited'
       UNION SELECT serving_port FROM deployments WHERE serving_port IS NOT NULL`,
    );
    return new Set(found.map((r) => Number(r.port)));
  }

  async insert(input: {
    deploymentId: string;
    revisionId: string;
    role: InstanceRole;
    port: number;
    logPath: string;
  }): Promise<InstanceRecord> {
    const [row] = await rows<Row>(
      this.db,
      `INSERT INTO runtime_processes (id, deployment_id, revision_id, role, port, status, log_path)
       VALUES ($1, $2, $3, $4, $5, 'starting', $6) RETURNING ${COLUMNS}`,
      [randomUUID(), input.deploymentId, input.revisionId, input.role, input.port, input.logPath],
    );
    return toRecord(row!);
  }

  /** Sets status (and pid/port/address when given); false when the row is gone (deployment deleted). */
  async update(
    id: string,
    status: InstanceStatus,
    set: { pid?: number | null; port?: number; address?: string | null } = {},
  ): Promise<boolean> {
    const found = await rows<{ id: string }>(
      this.db,
      `UPDATE runtime_processes
          SET status = $2, pid = CASE WHEN $3::boolean THEN $4::integer ELSE pid END, port = coalesce($5::integer, port),
              address = CASE WHEN $6::boolean THEN $7::text ELSE address END,
              started_at = CASE WHEN $2 = 'starting' THEN now() ELSE started_at END, updated_at = now()
        WHERE id = $1 RETURNING id`,
      [
        id,
        status,
        set.pid !== undefined,
        set.pid ?? null,
        set.port ?? null,
        set.address !== undefined,
        set.address ?? null,
      ],
    );
    return found.length > 0;
  }

  /** Counts a restart of the instance (the row is the instance across its restarts). */
  async countRestart(id: string): Promise<void> {
    await this.db.query(`UPDATE runtime_processes SET restarts = restarts + 1 WHERE id = $1`, [id]);
  }

  /** Records the instance's latest resource sample and health probe (docs/api.md, Metrics). */
  /** One sampling pass's samples, keyed by instance id, in one statement. */
  async recordSamples(samples: ReadonlyMap<string, InstanceSample>): Promise<void> {
    if (!samples.size) return;
    const list = [...samples];
    await this.db.query(
      `UPDATE runtime_processes p
          SET memory_bytes = s.memory_bytes, cpu_percent = s.cpu_percent,
              healthy = coalesce(s.healthy, p.healthy), last_health_check_at = coalesce(s.checked_at, p.last_health_check_at)
         FROM unnest($1::uuid[], $2::bigint[], $3::real[], $4::boolean[], $5::timestamptz[]) AS s(id, ` +
        `memory_bytes, cpu_percent, healthy, checked_at)
        WHERE p.id = s.id`,
      [
        list.map(([id]) => id),
        list.map(([, s]) => s.memoryBytes),
        list.map(([, s]) => s.cpuPercent),
        list.map(([, s]) => s.healthy),
        list.map(([, s]) => s.checkedAt),
      ],
    );
  }

  /** Moves every live instance of the deployment except `keepRevisionId`'s to `stopping`; returns them. */
  async markOthersStopping(deploymentId: string, keepRevisionId: string): Promise<InstanceRecord[]> {
    const found = await rows<Row>(
      this.db,
      `UPDATE runtime_processes SET status = 'stopping', updated_at = now()
        WHERE deployment_id = $1 AND revision_id <> $2 AND status IN ('starting', 'running')
        RETURNING ${COLUMNS}`,
      [deploymentId, keepRevisionId],
    );
    return found.map(toRecord);
  }

  /** Live rows (not exited), optionally of one deployment or revision. */
  async live(filter: { deploymentId?: string; revisionId?: string } = {}): Promise<InstanceRecord[]> {
    const found = await rows<Row>(
      this.db,
      `SELECT ${COLUMNS} FROM runtime_processes
        WHERE status <> 'exited' AND ($1::uuid IS NULL OR deployment_id = $1) AND ($2::uuid IS NULL OR revision_id = $2)
        ORDER BY deployment_id, revision_id, role, log_path`,
      [filter.deploymentId ?? null, filter.revisionId ?? null],
    );
    return found.map(toRecord);
  }

  async servingPort(deploymentId: string): Promise<number | null> {
    const [row] = await rows<{ serving_port: number | null }>(
      this.db,
      `SELECT serving_port FROM deployments WHERE id = $1`,
      [deploymentId],
    );
    return row?.serving_port ?? null;
  }

  /**
   * Records `port` as the deployment's serving port unless it already has one; returns the
   * deployment's serving port either way (null when the deployment is gone). The unique index
   * on `serving_port` rejects a port another deployment took meanwhile (the caller retries).
   */
  async claimServingPort(deploymentId: string, port: number): Promise<number | null> {
    await this.deployments.claimServingPort(deploymentId, port);
    return this.servingPort(deploymentId);
  }
}
