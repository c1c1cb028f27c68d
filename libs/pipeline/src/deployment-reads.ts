import {
  DeploymentRepository,
  queryRows,
  type Deployment,
  type DeploymentFilter,
  type EntityManager,
  type Page,
  type SelectQueryBuilder,
  type StoredRevisionConfig,
} from '@slipway/db';

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

/** A deployment a push to its integration might build: what the webhook matches on. */
export interface PushTarget {
  deploymentId: string;
  workspaceId: string;
  repoUrl: string | null;
  /** The ref of its latest revision: the branch it currently tracks. */
  repoRef: string | null;
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

/**
 * Deployments read together with what their revisions say, each in one query: the API's
 * presentation of a deployment and of a list page, and the push webhook's targets. The
 * deployment side of each query (which rows, which filters) is `DeploymentRepository`'s.
 */
export class DeploymentReads {
  constructor(private readonly manager: EntityManager) {}

  /** A deployment of the workspace with what the API shows beside it, or null. */
  async findPresentable(workspaceId: string, id: string): Promise<PresentableDeployment | null> {
    const [row] = await presentable(new DeploymentRepository(this.manager).queryOne(workspaceId, id));
    return row ?? null;
  }

  /** A list page of the workspace's deployments (`DeploymentRepository.queryList`) with what the API shows beside each. */
  list(workspaceId: string, filter: DeploymentFilter, page: Page): Promise<PresentableDeployment[]> {
    return presentable(new DeploymentRepository(this.manager).queryList(workspaceId, filter, page));
  }

  /**
   * Live deployments of the integration with `build_on_push` on, with the branch each tracks.
   * Read outside any lock: the webhook re-checks each one under its deployment lock.
   */
  pushTargets(integrationId: string): Promise<PushTarget[]> {
    return queryRows<PushTarget>(
      this.manager,
      `SELECT d.id AS "deploymentId", d.workspace_id AS "workspaceId",
              d.source_config->>'repo_url' AS "repoUrl", r.source_revision_config->>'repo_ref' AS "repoRef"
         FROM deployments d
         LEFT JOIN revisions r ON r.id = d.latest_revision_id
        WHERE d.integration_id = $1
          AND d.status <> 'AWAITING_DELETE'
          AND d.source_config->'build_on_push' = 'true'::jsonb
        ORDER BY d.created_at, d.id`,
      [integrationId],
    );
  }
}
