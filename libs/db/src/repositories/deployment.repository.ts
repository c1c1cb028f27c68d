import type { EntityManager, SelectQueryBuilder } from 'typeorm';
import { Deployment, type ComputeConfig, type PreviewRecord, type StoredSourceConfig } from '../entities/index.js';
import { preparedRows, queryRows } from '../sql.js';
import type { DeploymentStatus, ResourceSpec } from '@slipway/domain';

export const DEPLOYMENT_NAME_UNIQUE = 'deployments_workspace_name_key';
/** A deployment naming a listener id that no listener has. */
export const DEPLOYMENT_LISTENER_FK = 'deployments_listener_id_fkey';

/** What `insertWithTracingProject` wrote and read. */
export interface InsertedDeployment {
  /** False when the name's tracing project belongs to another deployment: the caller rolls back (409). */
  tracingProject: boolean;
  /**
   * The listener the deployment names, as its own workspace has it (null: the workspace has no
   * listener of that id; the caller rolls back, 404). Absent when it names none.
   */
  listener?: { computeConfig: ComputeConfig } | null;
}

/** What a PATCH writes to the (locked) deployment row: its config, sealed secrets and their names. */
export interface DeploymentPatch {
  sourceConfig: StoredSourceConfig;
  resourceSpec: ResourceSpec;
  secretsSealed: string | null;
  imageVersion: string | null;
  secretNames: string[];
}

export interface DeploymentFilter {
  nameContains?: string;
  name?: string;
  status?: string;
  remoteReconciled?: boolean;
  tagValueIds?: string[];
  imageVersion?: string;
  deploymentType?: string;
  deploymentIds?: string[];
  isPreview?: boolean;
  previewOf?: string;
}

/** Escapes LIKE wildcards so `name_contains=a_b` matches the text `a_b`, not `a` + any + `b`. */
const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * Deployments, always addressed within one workspace. What is read together with their revisions
 * (the API's presentation, a listener's work) is read by the api itself (services/api/src/reads: `DeploymentReads`, `ListenerPoll`).
 *
 * THE writer of the `deployments` row: every INSERT, UPDATE and DELETE of it is a named method
 * here, except a status change, which is `transitionDeployment`'s (deployment-status.ts), the one
 * conditional update of `status`. Other repositories, libs/pipeline and libs/runtime (handed one
 * as `DeploymentRuntimeWrites`) call these; test/infra/deployments-writes.test.ts keeps it so.
 */
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
    const [row] = await this.manager.query(
      `SELECT id FROM deployments WHERE id = $1 AND workspace_id = $2 FOR UPDATE`,
      [id, workspaceId],
    );
    return row ? this.find(workspaceId, id) : null;
  }

  /** Its status, name and listener (what decides where it runs), or null when it is gone; no lock. */
  async placementRow(
    id: string,
  ): Promise<{ status: DeploymentStatus; name: string; listenerId: string | null } | null> {
    const [row] = await queryRows<{ status: DeploymentStatus; name: string; listener_id: string | null }>(
      this.manager,
      `SELECT status, name, listener_id FROM deployments WHERE id = $1`,
      [id],
    );
    return row ? { status: row.status, name: row.name, listenerId: row.listener_id } : null;
  }

  /** Its name and recorded database name (null: the one derived from name and id), or null when it is gone; no lock. */
  async databaseNaming(id: string): Promise<{ name: string; databaseName: string | null } | null> {
    const [row] = await queryRows<{ name: string; database_name: string | null }>(
      this.manager,
      `SELECT name, database_name FROM deployments WHERE id = $1`,
      [id],
    );
    return row ? { name: row.name, databaseName: row.database_name } : null;
  }

  /** Where the deployment's traces go: its workspace and tracing project (null: the deployment is gone). */
  async tracingTarget(id: string): Promise<{ workspaceId: string; projectId: string | null } | null> {
    const [row] = await queryRows<{ workspace_id: string; tracing_project_id: string | null }>(
      this.manager,
      `SELECT workspace_id, tracing_project_id FROM deployments WHERE id = $1`,
      [id],
    );
    return row ? { workspaceId: row.workspace_id, projectId: row.tracing_project_id } : null;
  }

  /** Writes a PATCH's changes and marks it active now; the caller holds the row `lock`. */
  async applyPatch(id: string, patch: DeploymentPatch): Promise<void> {
    await this.manager.query(
      `UPDATE deployments SET source_config = $2, resource_spec = $3, secrets_sealed = $4, image_version = $5, secret_names = $6,
              last_activity_at = now(), updated_at = now()
        WHERE id = $1`,
      [
        id,
        JSON.stringify(patch.sourceConfig),
        JSON.stringify(patch.resourceSpec),
        patch.secretsSealed,
        patch.imageVersion,
        patch.secretNames,
      ],
    );
  }

  /** Takes back a redeployed revision's resource spec and secrets, so later PATCHes build on them; the caller holds the row `lock`. */
  async restoreRevisionConfig(
    id: string,
    resourceSpec: ResourceSpec,
    secretsSealed: string | null,
    secretNames: string[],
  ): Promise<void> {
    await this.manager.query(
      `UPDATE deployments SET resource_spec = $2, secrets_sealed = $3, secret_names = $4, updated_at = now() WHERE id = $1`,
      [id, JSON.stringify(resourceSpec), secretsSealed, secretNames],
    );
  }

  /** Unlinks its tracing project, before that project is deleted. */
  async detachTracingProject(id: string): Promise<void> {
    await this.manager.query(`UPDATE deployments SET tracing_project_id = NULL WHERE id = $1`, [id]);
  }

  /** Records the database provisioned for it, while it still awaits one. */
  async recordDatabase(id: string, database: string): Promise<void> {
    await this.manager.query(
      `UPDATE deployments SET database_name = $2 WHERE id = $1 AND status = 'AWAITING_DATABASE'`,
      [id, database],
    );
  }

  /** Removes it once torn down; only while AWAITING_DELETE (its revisions cascade). */
  async removeDeleted(id: string): Promise<void> {
    await this.manager.query(`DELETE FROM deployments WHERE id = $1 AND status = 'AWAITING_DELETE'`, [id]);
  }

  /** Marks it changed now (its tags were replaced); the caller holds the row `lock`. */
  async markUpdated(id: string): Promise<void> {
    await this.manager.query(`UPDATE deployments SET updated_at = now() WHERE id = $1`, [id]);
  }

  /** Makes the revision that just reached DEPLOYED its active one, active now (`RevisionFlow.transition`, under the row `lock`). */
  async activateRevision(id: string, revisionId: string): Promise<void> {
    await this.manager.query(
      `UPDATE deployments SET active_revision_id = $2, last_activity_at = now(), updated_at = now() WHERE id = $1`,
      [id, revisionId],
    );
  }

  /** Points `active_revision_id` at the revision and nothing else: for the bench's fixtures only (`RevisionFixtures`). */
  async setFixtureActiveRevision(id: string, revisionId: string): Promise<void> {
    await this.manager.query(`UPDATE deployments SET active_revision_id = $2 WHERE id = $1`, [id, revisionId]);
  }

  /**
   * The deployment's part of `RevisionRepository.insertAsLatest`'s one statement, which ends
   * with it: points `latest_revision_id` at the revision its CTE `inserted` returned and marks
   * the deployment active now. `deployment` is the number of the parameter holding its id.
   */
  static latestRevisionSql(deployment: number): string {
    return `UPDATE deployments SET latest_revision_id = (SELECT id FROM inserted), last_activity_at = now(), updated_at = now()
        WHERE id = $${deployment}`;
  }

  /**
   * Moves `last_activity_at` to now unless it moved within `intervalMs` (another process, or a
   * redeploy, already did), and always when the deployment is `UNUSED` (it must come back); never
   * for one being deleted. One conditional UPDATE (`DeploymentActivity.record`); the deployment's
   * status when it wrote, null when it did not.
   */
  async touchActivity(id: string, intervalMs: number): Promise<DeploymentStatus | null> {
    const rows = await preparedRows<{ status: DeploymentStatus }>(
      this.manager,
      `UPDATE deployments SET last_activity_at = now()
        WHERE id = $1 AND status <> 'AWAITING_DELETE'
          AND (last_activity_at < now() - $2 * interval '1 millisecond' OR status = 'UNUSED')
        RETURNING status`,
      [id, intervalMs],
    );
    return rows[0]?.status ?? null;
  }

  /** Makes it the parent's preview of this pull request, expiring `ttlHours` from now (a rollout extends it). */
  async markPreview(id: string, parentId: string, record: PreviewRecord, ttlHours: number): Promise<void> {
    await this.manager.query(
      `UPDATE deployments SET preview_of = $2, preview = $3, preview_expires_at = now() + make_interval(hours => $4) WHERE id = $1`,
      [id, parentId, JSON.stringify(record), ttlHours],
    );
  }

  /**
   * Records why a preview's delete starts (for its `preview.deleted` event; nothing for a
   * deployment that is no preview); false when its delete started already.
   */
  async markPreviewEnding(id: string, reason: string): Promise<boolean> {
    const rows = await queryRows(
      this.manager,
      `UPDATE deployments SET preview_end_reason = CASE WHEN preview_of IS NULL THEN NULL ELSE $2 END
        WHERE id = $1 AND status <> 'AWAITING_DELETE' RETURNING id`,
      [id, reason],
    );
    return rows.length > 0;
  }

  /**
   * Fills `secret_names` of a batch of rows (`fillSecretNames`): each row's names, where it still
   * has none and its sealed secrets are still the ones the names were read from.
   */
  async fillSecretNames(batch: ReadonlyArray<{ id: string; sealed: string; names: string[] }>): Promise<void> {
    await this.manager.query(
      `UPDATE deployments d SET secret_names = ARRAY(SELECT jsonb_array_elements_text(v.names))
         FROM unnest($1::uuid[], $2::text[], $3::jsonb[]) AS v(id, sealed, names)
        WHERE d.id = v.id AND d.secret_names IS NULL AND d.secrets_sealed = v.sealed`,
      [batch.map((r) => r.id), batch.map((r) => r.sealed), batch.map((r) => JSON.stringify(r.names))],
    );
  }

  /**
   * Records `port` as its serving port unless it has one (the process runtime's `ProcessStore`).
   * The unique index on `serving_port` rejects a port another deployment took meanwhile.
   */
  async claimServingPort(id: string, port: number): Promise<void> {
    await this.manager.query(`UPDATE deployments SET serving_port = $2 WHERE id = $1 AND serving_port IS NULL`, [
      id,
      port,
    ]);
  }

  /**
   * Records `uid` as its sandbox uid if its uid is still `previous` (the sandbox's
   * `SandboxIdentities`). The unique index on `sandbox_uid` rejects a uid another deployment took meanwhile.
   */
  async claimSandboxUid(id: string, uid: number, previous: number | null): Promise<void> {
    await this.manager.query(
      `UPDATE deployments SET sandbox_uid = $2 WHERE id = $1 AND sandbox_uid IS NOT DISTINCT FROM $3::integer`,
      [id, uid, previous],
    );
  }

  find(workspaceId: string, id: string): Promise<Deployment | null> {
    return this.manager.findOneBy(Deployment, { workspaceId, id });
  }

  /**
   * Inserts a new deployment with its tracing project, in one statement: a new project of its name
   * (id `deployment.tracingProjectId`), or the workspace's project of that name that survived a
   * deleted deployment, re-attached (`tracingProjectId` is then set to its id). Not attached when
   * that name's project belongs to another deployment: the deployment is inserted without one and
   * the caller must roll back (409). The project row is locked, so two creates of one name cannot
   * both take it. The same statement reads the listener the deployment names, if any, for the
   * caller's checks (a listener of another workspace reads as none). The row's defaulted
   * timestamps are set on `deployment`; constraint violations (name taken, integration or
   * listener gone) surface as from a plain insert.
   */
  async insertWithTracingProject(deployment: Deployment): Promise<InsertedDeployment> {
    const [insert, params] = this.manager
      .createQueryBuilder()
      .insert()
      .into(Deployment)
      .values(deployment)
      .getQueryAndParameters();
    // The deployment's tracing_project_id is the project's id as the project insert returns it.
    const project = params.indexOf(deployment.tracingProjectId) + 1;
    const placeholder = new RegExp(`\\$${project}(?!\\d)`, 'g');
    if (project < 1 || (insert.match(placeholder) ?? []).length !== 1)
      throw new Error('tracing_project_id is not one parameter of the deployment insert');
    const n = params.length;
    const listener = deployment.listenerId
      ? `, (SELECT jsonb_build_object('compute_config', l.compute_config) FROM listeners l
           WHERE l.id = deployments.listener_id AND l.workspace_id = deployments.workspace_id) AS listener`
      : '';
    const [row] = await preparedRows(
      this.manager,
      `WITH project AS (
         INSERT INTO tracing_projects (id, workspace_id, name, deployment_id) VALUES ($${project}, $${n + 1}, $${n + 2}, $${n + 3})
         ON CONFLICT (workspace_id, name) DO UPDATE SET deployment_id = EXCLUDED.deployment_id WHERE tracing_projects.deployment_id IS NULL
         RETURNING id)
       ${insert.replace(placeholder, '(SELECT id FROM project)')}
       RETURNING created_at, updated_at, status_changed_at, last_activity_at, tracing_project_id, edge_name${listener}`,
      [...params, deployment.workspaceId, deployment.name, deployment.id],
    );
    Object.assign(deployment, {
      tracingProjectId: row.tracing_project_id,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      statusChangedAt: row.status_changed_at,
      lastActivityAt: row.last_activity_at,
      edgeName: row.edge_name,
    });
    return {
      tracingProject: row.tracing_project_id != null,
      ...(deployment.listenerId
        ? { listener: row.listener ? { computeConfig: row.listener.compute_config } : null }
        : {}),
    };
  }

  async exists(workspaceId: string, id: string): Promise<boolean> {
    return (
      (await this.manager.query(`SELECT 1 FROM deployments WHERE workspace_id = $1 AND id = $2`, [workspaceId, id]))
        .length > 0
    );
  }

  /**
   * The query of the workspace's deployments (alias `d`), for a list page that adds what it shows
   * beside each row and its LIMIT and OFFSET: every filter of docs/api.md, Deployments, newest
   * first; each filter has its index (migrations 1764400000000-list-indexes,
   * 1764600000100-name-trgm-no-pending-list).
   */
  queryList(workspaceId: string, filter: DeploymentFilter): SelectQueryBuilder<Deployment> {
    const qb = this.manager
      .createQueryBuilder(Deployment, 'd')
      .where('d.workspace_id = :workspaceId', { workspaceId })
      .orderBy('d.created_at', 'DESC')
      .addOrderBy('d.id', 'DESC');
    if (filter.nameContains)
      qb.andWhere(`d.name ILIKE :nameLike ESCAPE '\\'`, { nameLike: `%${likeEscape(filter.nameContains)}%` });
    if (filter.name !== undefined) qb.andWhere('d.name = :name', { name: filter.name });
    if (filter.status) qb.andWhere('d.status = :status', { status: filter.status });
    if (filter.remoteReconciled !== undefined) {
      qb.andWhere(filter.remoteReconciled ? 'd.listener_id IS NOT NULL' : 'd.listener_id IS NULL');
    }
    if (filter.imageVersion !== undefined)
      qb.andWhere('d.image_version = :imageVersion', { imageVersion: filter.imageVersion });
    if (filter.deploymentType)
      qb.andWhere('d.deployment_type = :deploymentType', { deploymentType: filter.deploymentType });
    if (filter.deploymentIds?.length)
      qb.andWhere('d.id IN (:...deploymentIds)', { deploymentIds: filter.deploymentIds });
    if (filter.isPreview !== undefined) qb.andWhere(filter.isPreview ? 'd.preview IS NOT NULL' : 'd.preview IS NULL');
    if (filter.previewOf) qb.andWhere('d.preview_of = :previewOf', { previewOf: filter.previewOf });
    if (filter.tagValueIds?.length) {
      // Carrying ALL the given values: one semi-join per value, which the planner can run either
      // way round — from deployment_tag_values_value_idx for a rare value, or along the page
      // order probing the primary key for a common one (a count per deployment read them all).
      [...new Set(filter.tagValueIds)].forEach((tagValueId, i) =>
        qb.andWhere(
          `EXISTS (SELECT 1 FROM deployment_tag_values t WHERE t.deployment_id = d.id AND t.tag_value_id = :tag${i})`,
          {
            [`tag${i}`]: tagValueId,
          },
        ),
      );
    }
    return qb;
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
      `SELECT deployment_id, tag_value_id FROM deployment_tag_values WHERE deployment_id = ANY($1::uuid[]) ` +
        `ORDER BY created_at, tag_value_id`,
      [deploymentIds],
    );
    for (const row of rows) out.get(row.deployment_id)?.push(row.tag_value_id);
    return out;
  }
}
