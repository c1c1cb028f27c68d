import {
  DeploymentRepository,
  entityRows,
  preparedRows,
  queryRows,
  Revision,
  type EntityManager,
  type Page,
  type Rider,
} from '@slipway/db';
import { REVISION_TERMINAL, type RevisionStatus } from '@slipway/domain';
import { outboxInsert, type OutboxJob } from '@slipway/jobs';
import { writeRevision } from './status-transitions.js';

const TERMINAL = [...REVISION_TERMINAL];
const NO_REVISION = '00000000-0000-0000-0000-000000000000';

/** What a worker's heartbeat found: still its phase, past the phase's deadline, or moved on. */
export type Heartbeat = 'alive' | 'overdue' | 'moved-on';

/**
 * Revision rows: named reads, the insert, and the writes that change no status, which go
 * through `writeRevision`, the one conditional UPDATE (docs/architecture.md, Rules). Status
 * changes and starts are `RevisionFlow`'s alone (under the deployment lock, with what follows
 * them); nothing else in the product writes the revision table.
 */
/** A new revision's row: what its insert is given (status, attempt and clocks are the insert's own). */
export type NewRevision = Omit<
  Partial<Revision>,
  'status' | 'attempt' | 'startedAt' | 'deadlineAt' | 'heartbeatAt' | 'createdAt'
> & { id: string; deploymentId: string; source: string };

export class RevisionRepository {
  constructor(private readonly manager: EntityManager) {}

  // ---------------------------------------------------------------- reads

  /** A revision of the deployment, or null. */
  find(deploymentId: string, revisionId: string): Promise<Revision | null> {
    return this.manager.findOneBy(Revision, { deploymentId, id: revisionId });
  }

  /** `find`, only when the deployment is of `workspaceId`: one query for a revision GET. */
  async findInWorkspace(workspaceId: string, deploymentId: string, revisionId: string): Promise<Revision | null> {
    // A hot read (CLIs poll it until DEPLOYED): plain SQL over entityRows' columns, prepared, its row read by hand.
    const rows = entityRows(this.manager.connection, Revision, 'r');
    const [row] = await preparedRows(
      this.manager,
      `SELECT ${rows.columns} FROM revisions "r" JOIN deployments "d" ON "d"."id" = "r"."deployment_id" AND "d"."workspace_id" = $1
        WHERE "r"."id" = $2 AND "r"."deployment_id" = $3`,
      [workspaceId, revisionId, deploymentId],
    );
    return row ? rows.read(row) : null;
  }

  /** A deployment's revisions, newest first, optionally of some statuses only. */
  listOfDeployment(deploymentId: string, statuses: string[] | undefined, { limit, offset }: Page): Promise<Revision[]> {
    const qb = this.manager
      .createQueryBuilder(Revision, 'r')
      .where('r.deployment_id = :deploymentId', { deploymentId })
      .orderBy('r.created_at', 'DESC')
      .addOrderBy('r.id', 'DESC')
      .limit(limit)
      .offset(offset);
    if (statuses?.length) qb.andWhere('r.status IN (:...statuses)', { statuses });
    return qb.getMany();
  }

  /** The deployment a revision belongs to (unlocked: the id never changes), or null. */
  async deploymentOf(revisionId: string): Promise<string | null> {
    const [row] = await queryRows<{ deployment_id: string }>(
      this.manager,
      `SELECT deployment_id FROM revisions WHERE id = $1`,
      [revisionId],
    );
    return row?.deployment_id ?? null;
  }

  /**
   * Status and attempt, row-locked for the rest of the transaction (callers hold the
   * deployment lock first: the lock order every transition follows).
   */
  async lockedPhase(
    revisionId: string,
  ): Promise<{ status: RevisionStatus; attempt: number; source: string; artifactRef: string | null } | null> {
    const [row] = await queryRows<{
      status: RevisionStatus;
      attempt: number;
      source: string;
      artifact_ref: string | null;
    }>(this.manager, `SELECT status, attempt, source, artifact_ref FROM revisions WHERE id = $1 FOR UPDATE`, [
      revisionId,
    ]);
    return row ? { status: row.status, attempt: row.attempt, source: row.source, artifactRef: row.artifact_ref } : null;
  }

  /** The revision of the deployment holding its in-flight slot (other than `except`), or null. */
  async inFlight(deploymentId: string, except?: string): Promise<string | null> {
    const [row] = await queryRows<{ id: string }>(
      this.manager,
      `SELECT id FROM revisions
        WHERE deployment_id = $1 AND started_at IS NOT NULL AND status <> ALL($2::text[]) AND id <> $3
        LIMIT 1`,
      [deploymentId, TERMINAL, except ?? NO_REVISION],
    );
    return row?.id ?? null;
  }

  /**
   * Waiting revisions of the deployment, newest first. "Newest" is the deployment's latest
   * revision when it waits: PATCHes serialize on the deployment lock, so latest_revision_id
   * follows commit order, which created_at may not.
   */
  async waiting(deploymentId: string): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.manager,
      `SELECT r.id FROM revisions r JOIN deployments d ON d.id = r.deployment_id
        WHERE r.deployment_id = $1 AND r.status = 'QUEUED' AND r.started_at IS NULL
        ORDER BY (r.id = d.latest_revision_id) DESC, r.created_at DESC, r.id DESC`,
      [deploymentId],
    );
    return rows.map((r) => r.id);
  }

  /** Revisions of the deployment not yet in a terminal status, oldest first. */
  async openOfDeployment(deploymentId: string): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.manager,
      `SELECT id FROM revisions WHERE deployment_id = $1 AND status <> ALL($2::text[]) ORDER BY created_at`,
      [deploymentId, TERMINAL],
    );
    return rows.map((r) => r.id);
  }

  // ---------------------------------------------------------------- writes

  /**
   * Inserts a revision (CREATING) and makes it its deployment's latest, in one statement: the
   * insert runs as a CTE of the deployment's UPDATE, whose text is its owner's
   * (`DeploymentRepository.latestRevisionSql`); the foreign key is checked when the statement
   * ends, when the new row exists. The caller holds the deployment's row lock, or
   * inserted the deployment in this transaction. `started`: it is inserted started, with that
   * deadline, and `jobs` are recorded in the outbox by the same statement
   * (`RevisionFlow.insertFirst`), as is `rider`'s work, whose value it returns.
   */
  async insertAsLatest<T = undefined>(
    values: NewRevision,
    started?: { deadlineAt: Date },
    jobs: readonly OutboxJob[] = [],
    rider?: Rider<T>,
  ): Promise<T> {
    const [insert, params] = this.manager
      .createQueryBuilder()
      .insert()
      .into(Revision)
      .values({
        ...values,
        status: 'CREATING',
        statusMessage: null,
        ...(started && { startedAt: () => 'now()', deadlineAt: started.deadlineAt }),
        // The clock at insert, not the transaction start: inserts happen under the deployment
        // lock, so this orders revisions as their writes were serialized.
        createdAt: () => 'clock_timestamp()',
      })
      .getQueryAndParameters();
    const all = [...params, values.deploymentId];
    const deployment = all.length;
    // Jobs are recorded by the same statement, a CTE of their own (which runs unread).
    const outbox = jobs.length ? outboxInsert(jobs, all.length) : null;
    all.push(...(outbox?.params ?? []));
    const ride = rider?.sql(all.length);
    all.push(...(ride?.params ?? []));
    const [row] = await preparedRows<{ rider: unknown }>(
      this.manager,
      `WITH inserted AS (${insert} RETURNING id)${outbox ? `, jobs AS (${outbox.sql})` : ''}${ride ? `, ${ride.ctes}` : ''}
       ${DeploymentRepository.latestRevisionSql(deployment)}${ride ? ` RETURNING ${ride.value} AS rider` : ''}`,
      all,
    );
    return (rider ? rider.read(row?.rider) : undefined) as T;
  }

  /**
   * A worker's (or listener's) heartbeat, while the revision is still in one of `statuses`
   * (and at `attempt`, when given).
   */
  async beat(revisionId: string, statuses: readonly RevisionStatus[], attempt?: number): Promise<Heartbeat> {
    const applied = await writeRevision(this.manager, revisionId, {
      from: statuses,
      attempt,
      set: { heartbeatAt: new Date() },
    });
    return !applied ? 'moved-on' : applied.overdue ? 'overdue' : 'alive';
  }

  /** Merges `config` into the source_revision_config of a revision still in `statuses` at `attempt`. */
  async recordConfig(
    revisionId: string,
    statuses: readonly RevisionStatus[],
    attempt: number,
    config: Record<string, unknown>,
  ): Promise<boolean> {
    return !!(await writeRevision(this.manager, revisionId, {
      from: statuses,
      attempt,
      set: { revisionConfig: config },
    }));
  }
}
