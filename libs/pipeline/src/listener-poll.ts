import { Deployment, Revision, type EntityManager } from '@slipway/db';

/** What a listener's check-in found the reconciler marked UNKNOWN while its agent was away. */
export interface ListenerCheckIn {
  unknownDeployments: Array<{ id: string; databaseName: string | null }>;
  unknownRevisionIds: string[];
}

/** A deployment with work for its listener's agent, with its revision DEPLOYING if any. */
export interface ListenerWork {
  deployment: Deployment;
  deploying: Revision | null;
}

/** What a listener agent's poll reads (and the seen time it records), each in one round trip. */
export class ListenerPoll {
  constructor(private readonly manager: EntityManager) {}

  /**
   * An agent's poll: records that the listener was seen and returns what the reconciler marked
   * UNKNOWN while it was away (its deployments, and its rollouts), in one round trip. The seen
   * time is written at most once a second: agents poll often, and a write on every poll made each
   * one wait for the listener's row lock and a WAL flush (silence is judged in minutes).
   */
  async checkIn(listenerId: string): Promise<ListenerCheckIn> {
    const rows: Array<{ kind: 'deployment' | 'revision'; id: string; database_name: string | null }> = await this.manager.query(
      `WITH seen AS (UPDATE listeners SET last_seen_at = now() WHERE id = $1 AND (last_seen_at IS NULL OR last_seen_at < now() - interval '1 second'))
       SELECT 'deployment' AS kind, id, database_name FROM deployments WHERE listener_id = $1 AND status = 'UNKNOWN'
       UNION ALL
       SELECT 'revision', r.id, NULL FROM revisions r JOIN deployments d ON d.id = r.deployment_id WHERE d.listener_id = $1 AND r.status = 'UNKNOWN'`,
      [listenerId],
    );
    return {
      unknownDeployments: rows.filter((r) => r.kind === 'deployment').map((r) => ({ id: r.id, databaseName: r.database_name })),
      unknownRevisionIds: rows.filter((r) => r.kind === 'revision').map((r) => r.id),
    };
  }

  /**
   * A listener's deployments with work for its agent, oldest first: those with a revision
   * DEPLOYING (returned with it; at most one is in flight) and those AWAITING_DELETE.
   */
  async withWork(listenerId: string): Promise<ListenerWork[]> {
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
}
