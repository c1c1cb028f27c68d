import type { EntityManager } from 'typeorm';
import { Deployment } from '../entities/index.js';
import type { Page } from './pagination.js';

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

/** Escapes LIKE wildcards so `name_contains=a_b` matches the text `a_b`, not `a` + any + `b`. */
const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** Deployments and their revisions, always addressed within one workspace. */
export class DeploymentRepository {
  constructor(private readonly manager: EntityManager) {}

  find(workspaceId: string, id: string): Promise<Deployment | null> {
    return this.manager.findOneBy(Deployment, { workspaceId, id });
  }

  /** Every filter of docs/api.md, Deployments, newest first; each filter has its index (migrations 1764400000000-list-indexes, 1764500000200-name-trgm-no-pending-list). */
  async list(workspaceId: string, filter: DeploymentFilter, { limit, offset }: Page): Promise<Deployment[]> {
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
    return qb.getMany();
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
