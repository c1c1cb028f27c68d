import { QUOTA_FIELDS, type QuotaName, type Quotas } from '@slipway/domain';
import type { EntityManager } from 'typeorm';
import { queryRows } from '../sql.js';

const NAMES = Object.keys(QUOTA_FIELDS) as QuotaName[];
/** bigint columns come back from pg as strings. */
const numberOrNull = (v: unknown) => (v === null || v === undefined ? null : Number(v));

/** The workspace's overrides of the default quotas: only the ones set. */
export type QuotaOverrides = Partial<Quotas>;

/** The overrides set in a `workspace_quotas` row (absent: none). */
export function overridesOf(row: Record<string, unknown> | undefined): QuotaOverrides {
  const out: QuotaOverrides = {};
  for (const name of NAMES) {
    const value = numberOrNull(row?.[QUOTA_FIELDS[name]]);
    if (value !== null) out[name] = value;
  }
  return out;
}

/**
 * Quotas of workspaces (docs/operations.md, Quotas and retention): the configured defaults with
 * the workspace's own overrides on top, and the usage each quota is checked against.
 */
export class QuotaRepository {
  constructor(private readonly manager: EntityManager) {}

  async overrides(workspaceId: string): Promise<QuotaOverrides> {
    const [row] = await queryRows<Record<string, unknown>>(
      this.manager,
      `SELECT * FROM workspace_quotas WHERE workspace_id = $1`,
      [workspaceId],
    );
    return overridesOf(row);
  }

  async effective(workspaceId: string, defaults: Quotas): Promise<Quotas> {
    return { ...defaults, ...(await this.overrides(workspaceId)) };
  }

  /** Replaces the overrides: a quota given as null goes back to the default. */
  async setOverrides(workspaceId: string, overrides: { [N in QuotaName]?: number | null }): Promise<void> {
    const given = NAMES.filter((n) => n in overrides);
    const columns = given.map((n) => QUOTA_FIELDS[n]);
    await this.manager.query(
      `INSERT INTO workspace_quotas (workspace_id${columns.map((c) => `, ${c}`).join('')}) ` +
        `VALUES ($1${given.map((_, i) => `, $${i + 2}`).join('')})
       ON CONFLICT (workspace_id) DO UPDATE SET updated_at = now()${columns.map((c) => `, ${c} = EXCLUDED.${c}`).join('')}`,
      [workspaceId, ...given.map((n) => overrides[n] ?? null)],
    );
  }

  /**
   * Serialises quota-checked writes of one workspace until the transaction ends (uploads; a
   * create laying out deployment slots again), so two writes racing for the last of something
   * cannot both see it free. `NO KEY UPDATE` leaves foreign-key checks
   * against the workspace (every insert of its rows) unblocked.
   */
  async lockWorkspace(workspaceId: string): Promise<void> {
    await this.manager.query(`SELECT id FROM workspaces WHERE id = $1 FOR NO KEY UPDATE`, [workspaceId]);
  }

  /** The workspace whose quotas a deployment's uploads count against. */
  async workspaceOfDeployment(deploymentId: string): Promise<string | null> {
    const [row] = await queryRows<{ workspace_id: string }>(
      this.manager,
      `SELECT workspace_id FROM deployments WHERE id = $1`,
      [deploymentId],
    );
    return row?.workspace_id ?? null;
  }

  /** Upload URLs issued to the workspace's deployments in the last 24 hours. */
  async uploadsLastDay(workspaceId: string): Promise<number> {
    const [row] = await queryRows<{ n: string }>(
      this.manager,
      `SELECT count(*) AS n FROM uploads u JOIN deployments d ON d.id = u.deployment_id
        WHERE d.workspace_id = $1 AND u.created_at > now() - interval '24 hours'`,
      [workspaceId],
    );
    return Number(row!.n);
  }

  /** Bytes of the workspace's completed uploads still stored. */
  async uploadBytes(workspaceId: string): Promise<number> {
    const [row] = await queryRows<{ n: string | null }>(
      this.manager,
      `SELECT coalesce(sum(u.size_bytes), 0) AS n FROM uploads u JOIN deployments d ON d.id = u.deployment_id
        WHERE d.workspace_id = $1 AND u.completed_at IS NOT NULL`,
      [workspaceId],
    );
    return Number(row!.n);
  }
}
