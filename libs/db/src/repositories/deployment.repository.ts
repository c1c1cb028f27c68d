import type { EntityManager, SelectQueryBuilder } from 'typeorm';
import { Deployment, Revision, type StoredRevisionConfig } from '../entities/index.js';
import type { Page } from './pagination.js';
import { queryRows } from '../sql.js';
import type { DeploymentStatus } from '@slipway/domain';

export const DEPLOYMENT_NAME_UNIQUE = 'deployments_workspace_name_key';

export interface DeploymentFilter {
  nameContains?: string;
  name?: string;
  status?: string;
  remoteReconciled?: boolean;
  tagValueIds?: string[];
  imageVersion?: string;
  deploymentType?: string;
  deploymentIds?: string[];
}

/** A deployment with what the API shows beside it, read in the same query. */
export interface PresentableDeployment {
  deployment: Deployment;
  /** The latest revision's source_revision_config (null without a revision). */
  latestRevisionConfig: StoredRevisionConfig | null;
  /** Its tag value ids, oldest tag first. */
  tagValueIds: string[];
  /** Whether its active revision (else its latest) was built as an agent server; null: not built. */
  agentServer: boolean | null;
}

/**
 * Adds the latest revision's config and the tag value ids to a query of deployments `d` as two
 * correlated subqueries (a primary-key probe and an index range per row), so a GET or a list
 * page is one round trip, not one per table.
 */
async function presentable(qb: SelectQueryBuilder<Deployment>): Promise<PresentableDeployment[]> {
  const { entities, raw } = await qb
    .addSelect('(SELECT r.source_revision_config FROM revisions r WHERE r.id = d.latest_revision_id)', 'latest_revision_config')
    .addSelect(
      'ARRAY(SELECT t.tag_value_id::text FROM deployment_tag_values t WHERE t.deployment_id = d.id ORDER BY t.created_at, t.tag_value_id)',
      'tag_value_ids',
    )
    .addSelect(
      `coalesce(${['d.active_revision_id', 'd.latest_revision_id']
        .map((id) => `(SELECT (r.source_revision_config->>'agent_server')::boolean FROM revisions r WHERE r.id = ${id})`)
        .join(', ')})`,
      'agent_server',
    )
    .getRawAndEntities<{ latest_revision_config: StoredRevisionConfig | null; tag_value_ids: string[]; agent_server: boolean | null }>();
  // No joins: one raw row per entity, in the same order.
  return entities.map((deployment, i) => ({
    deployment,
    latestRevisionConfig: raw[i]!.latest_revision_config,
    tagValueIds: raw[i]!.tag_value_ids,
    agentServer: raw[i]!.agent_server,
  }));
}

/** Escapes LIKE wildcards so `name_contains=a_b` matches the text `a_b`, not `a` + any + `b`. */
const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** Deployments and their revisions, always addressed within one workspace. */
export class DeploymentRepository {
  constructor(private readonly manager: EntityManager) {}

  /**
   * THE deployment row lock, held for the rest of the transaction: the first lock of every path
   * that changes a revision's status (deployment row, then revision rows), so writers of one
   * deployment serialize instead of deadlocking. Its status and listener, or null when it is gone.
   */
  async lock(id: string): Promise<{ status: DeploymentStatus; listenerId: string | null } | null> {
    const rows: Array<{ status: DeploymentStatus; listener_id: string | null }> = await this.manager.query(
      `SELECT status, listener_id FROM deployments WHERE id = $1 FOR UPDATE`,
      [id],
    );
    return rows[0] ? { status: rows[0].status, listenerId: rows[0].listener_id } : null;
  }

  /** `lock`, then the deployment, only when it is of `workspaceId`; null otherwise. */
  async lockInWorkspace(workspaceId: string, id: string): Promise<Deployment | null> {
    const [row] = await this.manager.query(`SELECT id FROM deployments WHERE id = $1 AND workspace_id = $2 FOR UPDATE`, [id, workspaceId]);
    return row ? this.find(workspaceId, id) : null;
  }

  /** Its status, name and listener (what decides where it runs), or null when it is gone; no lock. */
  async placementRow(id: string): Promise<{ status: DeploymentStatus; name: string; listenerId: string | null } | null> {
    const [row] = await queryRows<{ status: DeploymentStatus; name: string; listener_id: string | null }>(
      this.manager,
      `SELECT status, name, listener_id FROM deployments WHERE id = $1`,
      [id],
    );
    return row ? { status: row.status, name: row.name, listenerId: row.listener_id } : null;
  }

  /** Records the database provisioned for it, while it still awaits one. */
  async recordDatabase(id: string, database: string): Promise<void> {
    await this.manager.query(`UPDATE deployments SET database_name = $2 WHERE id = $1 AND status = 'AWAITING_DATABASE'`, [id, database]);
  }

  /** Removes it once torn down; only while AWAITING_DELETE (its revisions cascade). */
  async removeDeleted(id: string): Promise<void> {
    await this.manager.query(`DELETE FROM deployments WHERE id = $1 AND status = 'AWAITING_DELETE'`, [id]);
  }

  find(workspaceId: string, id: string): Promise<Deployment | null> {
    return this.manager.findOneBy(Deployment, { workspaceId, id });
  }

  /**
   * Inserts a new deployment and links its tracing project to it, in one statement (the insert is
   * a CTE of the link). The row's defaulted timestamps are set on `deployment`. Constraint
   * violations (name taken, integration gone) surface as from a plain insert.
   */
  async insertLinkingTracingProject(deployment: Deployment): Promise<void> {
    const [insert, params] = this.manager.createQueryBuilder().insert().into(Deployment).values(deployment).getQueryAndParameters();
    const [row] = await this.manager.query(
      `WITH inserted AS (${insert} RETURNING created_at, updated_at, status_changed_at, last_activity_at),
            linked AS (UPDATE tracing_projects SET deployment_id = $${params.length + 1} WHERE id = $${params.length + 2})
       SELECT * FROM inserted`,
      [...params, deployment.id, deployment.tracingProjectId],
    );
    Object.assign(deployment, {
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      statusChangedAt: row.status_changed_at,
      lastActivityAt: row.last_activity_at,
    });
  }

  async exists(workspaceId: string, id: string): Promise<boolean> {
    return (await this.manager.query(`SELECT 1 FROM deployments WHERE workspace_id = $1 AND id = $2`, [workspaceId, id])).length > 0;
  }

  /** `find` with what the API shows beside the row, in one query. */
  async findPresentable(workspaceId: string, id: string): Promise<PresentableDeployment | null> {
    const [row] = await presentable(
      this.manager.createQueryBuilder(Deployment, 'd').where('d.workspace_id = :workspaceId AND d.id = :id', { workspaceId, id }),
    );
    return row ?? null;
  }

  /** Every filter of docs/api.md, Deployments, newest first; each filter has its index (migrations 1764400000000-list-indexes, 1764600000100-name-trgm-no-pending-list). */
  async list(workspaceId: string, filter: DeploymentFilter, { limit, offset }: Page): Promise<PresentableDeployment[]> {
    const qb = this.manager
      .createQueryBuilder(Deployment, 'd')
      .where('d.workspace_id = :workspaceId', { workspaceId })
      .orderBy('d.created_at', 'DESC')
      .addOrderBy('d.id', 'DESC')
      .limit(limit)
      .offset(offset);
    if (filter.nameContains) qb.andWhere(`d.name ILIKE :nameLike ESCAPE '\\'`, { nameLike: `%${likeEscape(filter.nameContains)}%` });
    if (filter.name !== undefined) qb.andWhere('d.name = :name', { name: filter.name });
    if (filter.status) qb.andWhere('d.status = :status', { status: filter.status });
    if (filter.remoteReconciled !== undefined) {
      qb.andWhere(filter.remoteReconciled ? 'd.listener_id IS NOT NULL' : 'd.listener_id IS NULL');
    }
    if (filter.imageVersion !== undefined) qb.andWhere('d.image_version = :imageVersion', { imageVersion: filter.imageVersion });
    if (filter.deploymentType) qb.andWhere('d.deployment_type = :deploymentType', { deploymentType: filter.deploymentType });
    if (filter.deploymentIds?.length) qb.andWhere('d.id IN (:...deploymentIds)', { deploymentIds: filter.deploymentIds });
    if (filter.tagValueIds?.length) {
      // Carrying ALL the given values: one semi-join per value, which the planner can run either
      // way round — from deployment_tag_values_value_idx for a rare value, or along the page
      // order probing the primary key for a common one (a count per deployment read them all).
      [...new Set(filter.tagValueIds)].forEach((tagValueId, i) =>
        qb.andWhere(`EXISTS (SELECT 1 FROM deployment_tag_values t WHERE t.deployment_id = d.id AND t.tag_value_id = :tag${i})`, {
          [`tag${i}`]: tagValueId,
        }),
      );
    }
    return presentable(qb);
  }

  /**
   * A listener's deployments with work for its agent, oldest first: those with a revision
   * DEPLOYING (returned with it; at most one is in flight) and those AWAITING_DELETE.
   */
  async withListenerWork(listenerId: string): Promise<Array<{ deployment: Deployment; deploying: Revision | null }>> {
    const rows = await this.manager
      .createQueryBuilder(Deployment, 'd')
      .leftJoinAndMapOne('d.deploying', Revision, 'r', `r.deployment_id = d.id AND r.status = 'DEPLOYING'`)
      .where('d.listener_id = :listenerId', { listenerId })
      // Driven from the few rows with work (by listener and status, and the open revisions'
      // index), not from every deployment the listener runs: a poll costs what is pending.
      .andWhere(
        `d.id IN (SELECT x.id FROM deployments x WHERE x.listener_id = :listenerId AND x.status = 'AWAITING_DELETE'
                  UNION ALL SELECT o.deployment_id FROM revisions o WHERE o.status = 'DEPLOYING')`,
      )
      .orderBy('d.created_at', 'ASC')
      .addOrderBy('d.id', 'ASC')
      .getMany();
    return rows.map((row) => {
      const { deploying, ...rest } = row as Deployment & { deploying?: Revision };
      return { deployment: Object.assign(new Deployment(), rest), deploying: deploying ?? null };
    });
  }

  /** Deployments of `type` across every workspace of the organization. */
  async countOfTypeInOrganization(organizationId: string, type: string): Promise<number> {
    const [row] = await this.manager.query(
      `SELECT count(*)::int AS count FROM deployments d JOIN workspaces w ON w.id = d.workspace_id
        WHERE w.organization_id = $1 AND d.deployment_type = $2`,
      [organizationId, type],
    );
    return row.count;
  }

  /** Tag value ids of each given deployment. */
  async tagValueIds(deploymentIds: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(deploymentIds.map((id) => [id, []]));
    if (!deploymentIds.length) return out;
    const rows: Array<{ deployment_id: string; tag_value_id: string }> = await this.manager.query(
      `SELECT deployment_id, tag_value_id FROM deployment_tag_values WHERE deployment_id = ANY($1::uuid[]) ORDER BY created_at, tag_value_id`,
      [deploymentIds],
    );
    for (const row of rows) out.get(row.deployment_id)?.push(row.tag_value_id);
    return out;
  }
}
