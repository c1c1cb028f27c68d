import {
  Deployment,
  DeploymentRepository,
  entityRows,
  preparedRows,
  queryRows,
  type DeploymentFilter,
  type EntityManager,
  type EntityRows,
  type Page,
  type PreviewSettings,
  type StoredRevisionConfig,
} from '@slipway/db';

/** A deployment with what the API shows beside it, read in the same query. */
export interface PresentableDeployment {
  deployment: Deployment;
  /** The latest revision's source_revision_config (null without a revision). */
  latestRevisionConfig: StoredRevisionConfig | null;
  /** Its tag value ids, oldest tag first. */
  tagValueIds: string[];
  /** Whether its active revision (else its latest) is an agent server (built as one, or an agent image); null: not known yet. */
  agentServer: boolean | null;
  /** A forge-opened preview's feedback to its pull request (what was last told, the last failure); null otherwise. */
  previewFeedback: PreviewFeedbackState | null;
}

/** What a preview last told its pull request, and the forge's last refusal (`preview_feedback`). */
export interface PreviewFeedbackState {
  reported_state: 'pending' | 'success' | 'failure' | null;
  attempts: number;
  last_error: string | null;
  next_attempt_at: string;
  updated_at: string;
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
 * What the API shows beside each deployment `d`, as correlated subqueries of the query that reads
 * it (a primary-key probe or an index range per row), so a GET or a list page is one round trip,
 * not one per table: the latest revision's config, the tag value ids, and whether its active
 * revision (else its latest) is an agent server: built as one, or an image its rollout found to
 * be one; an `internal_docker` deployment is one from the start (only the deploy CLIs make them).
 */
const BESIDE = [
  `(SELECT r.source_revision_config FROM revisions r WHERE r.id = d.latest_revision_id) AS latest_revision_config`,
  `ARRAY(SELECT t.tag_value_id::text FROM deployment_tag_values t WHERE t.deployment_id = d.id
     ORDER BY t.created_at, t.tag_value_id) AS tag_value_ids`,
  `coalesce(${['d.active_revision_id', 'd.latest_revision_id']
    .map((id) => `(SELECT (r.source_revision_config->>'agent_server')::boolean FROM revisions r WHERE r.id = ${id})`)
    .join(', ')}, CASE WHEN d.source = 'internal_docker' THEN true END) AS agent_server`,
  `CASE WHEN d.preview_of IS NOT NULL THEN (SELECT jsonb_build_object(
      'reported_state', f.reported_state, 'attempts', f.attempts, 'last_error', f.last_error,
     'next_attempt_at', f.next_attempt_at, 'updated_at', f.updated_at)
      FROM preview_feedback f WHERE f.deployment_id = d.id) END AS preview_feedback`,
].join(', ');

type BesideColumns = {
  latest_revision_config: StoredRevisionConfig | null;
  tag_value_ids: string[];
  agent_server: boolean | null;
  preview_feedback: PreviewFeedbackState | null;
};

/** Deployments (`EntityRows`) and what is shown beside them, from raw rows. */
function presentable(
  rows: EntityRows<Deployment>,
  raw: Array<Record<string, unknown> & BesideColumns>,
): PresentableDeployment[] {
  return raw.map((r) => ({
    deployment: rows.read(r),
    latestRevisionConfig: r.latest_revision_config,
    tagValueIds: r.tag_value_ids,
    agentServer: r.agent_server,
    previewFeedback: r.preview_feedback,
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
    const rows = this.rows();
    const sql = `SELECT ${rows.columns}, ${BESIDE} FROM deployments "d" WHERE "d"."workspace_id" = $1 AND "d"."id" = $2`;
    const [row] = presentable(rows, await preparedRows(this.manager, sql, [workspaceId, id]));
    return row ?? null;
  }

  /** A list page of the workspace's deployments (`DeploymentRepository.queryList`) with what the API shows beside each. */
  async list(workspaceId: string, filter: DeploymentFilter, { limit, offset }: Page): Promise<PresentableDeployment[]> {
    // TypeORM builds the filtered query (its select names columns as `entityRows` reads them); its rows are read by hand.
    const [query, filtered] = new DeploymentRepository(this.manager)
      .queryList(workspaceId, filter)
      .addSelect(BESIDE)
      .getQueryAndParameters();
    const sql = `${query} LIMIT $${filtered.length + 1} OFFSET $${filtered.length + 2}`;
    const params = [...filtered, limit, offset];
    // The pages clients poll (all of them, or one name: the deploy CLIs' lookup) are prepared.
    // Other filters stay planned for their values (a name fragment's selectivity), and their text
    // varies with the number of ids and tags given.
    const polled = Object.entries(filter).every(([key, value]) => value === undefined || key === 'name');
    return presentable(this.rows(), await (polled ? preparedRows : queryRows)(this.manager, sql, params));
  }

  private rows(): EntityRows<Deployment> {
    return entityRows(this.manager.connection, Deployment, 'd');
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

  /** The deployments of an integration that open previews of pull requests (`source_config.previews.enabled`), not previews themselves. */
  previewParents(
    integrationId: string,
  ): Promise<Array<{ deploymentId: string; workspaceId: string; repoUrl: string | null; previews: PreviewSettings }>> {
    return queryRows(
      this.manager,
      `SELECT d.id AS "deploymentId", d.workspace_id AS "workspaceId",
              d.source_config->>'repo_url' AS "repoUrl", d.source_config->'previews' AS previews
         FROM deployments d
        WHERE d.integration_id = $1 AND d.status <> 'AWAITING_DELETE' AND d.preview_of IS NULL
          AND d.source_config->'previews'->'enabled' = 'true'::jsonb
        ORDER BY d.created_at, d.id`,
      [integrationId],
    );
  }
}
