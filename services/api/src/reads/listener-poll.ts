import { isUuid } from '@slipway/domain';
import {
  Deployment,
  entityRows,
  Listener,
  preparedRows,
  queryRows,
  Revision,
  type EntityManager,
  type SealedCredentials,
} from '@slipway/db';

/** What a listener's check-in found the reconciler marked UNKNOWN while its agent was away. */
export interface ListenerCheckIn {
  /** `ready`: its database name is recorded and a rollout of it has begun (it goes back READY). */
  unknownDeployments: Array<{ id: string; ready: boolean }>;
  unknownRevisionIds: string[];
}

/**
 * A deployment with work for its listener's agent (a revision DEPLOYING, or AWAITING_DELETE),
 * with what its entry is rendered from.
 */
export interface ListenerWork {
  deployment: Deployment;
  /** Its revision DEPLOYING, if any (at most one is in flight). */
  deploying: Revision | null;
  /** The revision that serves a deployment AWAITING_DELETE (what to remove), if any ever did. */
  active: Revision | null;
  /** Its store passwords, sealed; null when it has no credentials row yet. */
  sealed: SealedCredentials | null;
}

/** What an agent's poll finds first: enough to answer from the last rendering when nothing changed. */
export interface ListenerGlance {
  /** Whether the reconciler marked any of its deployments or rollouts UNKNOWN (to revive first). */
  unknown: boolean;
  /** A digest of every row the desired state is rendered from (`ListenerRendering.fingerprint`). */
  fingerprint: string;
}

/** What a listener's desired state is rendered from. */
export interface ListenerRendering {
  listener: Listener;
  /** Its deployments with work, oldest first. */
  work: ListenerWork[];
  /**
   * A digest of the full text of those rows (the listener's without its seen time), taken in the
   * same statement: equal fingerprints, equal inputs.
   */
  fingerprint: string;
}

/**
 * Ids of listener `$1`'s deployments that have work: driven from the few rows with work (by
 * listener and status: deployments', and revisions' own copy of their listener with
 * `revisions_listener_work_idx`), not from every deployment the listener runs nor every rollout
 * in flight in the installation, so a poll costs what is pending for this listener.
 */
const WITH_WORK = `SELECT x.id FROM deployments x WHERE x.listener_id = $1 AND x.status = 'AWAITING_DELETE'
                   UNION ALL SELECT o.deployment_id FROM revisions o WHERE o.listener_id = $1 AND o.status = 'DEPLOYING'`;

/** Records that listener `$1` was seen, at most once a second (see `checkIn`). */
const RECORD_SEEN = `UPDATE listeners SET last_seen_at = now() WHERE id = $1
  AND (last_seen_at IS NULL OR last_seen_at < now() - interval '1 second')`;

/**
 * The rows a listener's desired state is rendered from, `$1` the listener and `$2` its workspace:
 * the listener, and for each deployment with work its revision DEPLOYING (`r`), the revision that
 * serves it when it is being deleted (`a`), and its sealed store passwords (`c`).
 */
const RENDERED_FROM = `FROM listeners l
         LEFT JOIN deployments d ON d.listener_id = l.id AND d.id IN (${WITH_WORK})
         LEFT JOIN revisions r ON r.listener_id = l.id AND r.status = 'DEPLOYING' AND r.deployment_id = d.id
         LEFT JOIN revisions a ON a.id = d.active_revision_id AND d.status = 'AWAITING_DELETE'
         LEFT JOIN deployment_credentials c ON c.deployment_id = d.id
        WHERE l.id = $1 AND l.workspace_id = $2`;

/**
 * The digest of `RENDERED_FROM`'s rows, as their full text: any change to any column changes it.
 * The listener's seen time is left out (it changes with every check-in and is not rendered). In
 * a fixed order, so the same rows always make the same digest.
 */
const FINGERPRINT = `(SELECT encode(sha256(convert_to(
           (to_jsonb(l) - 'last_seen_at')::text || string_agg(ROW(d, r, a, c)::text, E'\\n'
             ORDER BY d.created_at, d.id, r.id), 'UTF8')), 'base64')
         ${RENDERED_FROM} GROUP BY l.id)`;

/**
 * A poll's first statement (`ListenerPoll.glance`), `$1` the listener and `$2` its workspace: the
 * check-in, the fingerprint, and whether anything of the listener is UNKNOWN. Exported for
 * its plan's test (test/integration/listener-rollout-begins.test.ts).
 */
export const GLANCE = `WITH seen AS (${RECORD_SEEN} AND workspace_id = $2)
       SELECT ${FINGERPRINT} AS fingerprint,
              EXISTS (SELECT 1 FROM deployments u WHERE u.listener_id = $1 AND u.status = 'UNKNOWN')
              OR EXISTS (SELECT 1 FROM revisions ur WHERE ur.listener_id = $1 AND ur.status = 'UNKNOWN') AS unknown
         FROM listeners WHERE id = $1 AND workspace_id = $2`;

/**
 * Listeners whose glance is a prepared statement of its own, per connection pool (a DataSource),
 * at most OWN_GLANCES_MAX: each pooled connection keeps every statement it prepared for as long
 * as it lives (Postgres has no eviction), so past the cap a listener's glance is planned on each
 * poll instead. The first listeners to poll keep theirs.
 */
const ownGlances = new WeakMap<object, Map<string, string>>();
export const OWN_GLANCES_MAX = 500;

/** What a listener agent's poll reads (and the seen time it records), each in one round trip. */
export class ListenerPoll {
  constructor(
    private readonly manager: EntityManager,
    /** Listeners with a glance statement of their own per connection pool, at most (OWN_GLANCES_MAX). */
    private readonly ownGlancesMax = OWN_GLANCES_MAX,
  ) {}

  /**
   * An agent's poll: records that the listener was seen and returns what the reconciler marked
   * UNKNOWN while it was away (its deployments, and its rollouts), in one round trip. The seen
   * time is written at most once a second: agents poll often, and a write on every poll made each
   * one wait for the listener's row lock and a WAL flush (silence is judged in minutes).
   */
  async checkIn(listenerId: string): Promise<ListenerCheckIn> {
    const rows: Array<{ kind: 'deployment' | 'revision'; id: string; ready: boolean | null }> =
      await this.manager.query(
        `WITH seen AS (${RECORD_SEEN})
       SELECT 'deployment' AS kind, u.id, u.database_name IS NOT NULL AND (u.active_revision_id IS NOT NULL
              OR EXISTS (SELECT 1 FROM revisions b WHERE b.deployment_id = u.id
                          AND b.status IN ('DEPLOYING', 'UNKNOWN', 'DEPLOYED', 'DEPLOY_FAILED'))) AS ready
         FROM deployments u WHERE u.listener_id = $1 AND u.status = 'UNKNOWN'
       UNION ALL
       SELECT 'revision', r.id, NULL FROM revisions r WHERE r.listener_id = $1 AND r.status = 'UNKNOWN'`,
        [listenerId],
      );
    return {
      unknownDeployments: rows
        .filter((r) => r.kind === 'deployment')
        .map((r) => ({ id: r.id, ready: r.ready === true })),
      unknownRevisionIds: rows.filter((r) => r.kind === 'revision').map((r) => r.id),
    };
  }

  /**
   * An agent's poll of its desired state, first step: records the seen time as `checkIn` does,
   * and says whether anything of the listener is UNKNOWN and what the fingerprint of its
   * desired state's rows is; null when the listener is not the workspace's. One small row: a
   * poll whose fingerprint is the last rendering's is answered from it (agents poll every few
   * seconds, most often to hear "unchanged"), without reading or parsing the rows themselves.
   * Prepared, as `read`: planning these statements took longer than running them. One statement
   * per listener, its ids written in (checked to be UUIDs): a statement with the listener as a
   * parameter had its generic plan priced for the listener with the most rollouts in flight, so
   * Postgres planned it again on every poll of every other listener (0.45 ms of planning for
   * 0.2 ms of work, measured with one listener holding thousands); with the ids in its text, a
   * statement is planned once per connection (for OWN_GLANCES_MAX listeners per connection pool).
   */
  async glance(workspaceId: string, listenerId: string): Promise<ListenerGlance | null> {
    if (!isUuid(listenerId) || !isUuid(workspaceId)) return null;
    const pool = this.manager.connection;
    let own = ownGlances.get(pool);
    if (!own) ownGlances.set(pool, (own = new Map()));
    const key = `${listenerId}/${workspaceId}`;
    let text = own.get(key);
    if (text === undefined) {
      if (own.size >= this.ownGlancesMax) {
        // Unnamed: planned for these values on each poll, and kept nowhere.
        const [row] = await queryRows<ListenerGlance>(this.manager, GLANCE, [listenerId, workspaceId]);
        return row ?? null;
      }
      text = GLANCE.replaceAll('$1', `'${listenerId}'::uuid`).replaceAll('$2', `'${workspaceId}'::uuid`);
      own.set(key, text);
    }
    const [row] = await preparedRows<ListenerGlance>(this.manager, text, []);
    return row ?? null;
  }

  /** The rows of the listener's desired state and their fingerprint, in one statement; null when the listener is not the workspace's. */
  async read(workspaceId: string, listenerId: string): Promise<ListenerRendering | null> {
    const ds = this.manager.connection;
    const [l, d, r, a] = [
      entityRows(ds, Listener, 'l'),
      entityRows(ds, Deployment, 'd'),
      entityRows(ds, Revision, 'r'),
      entityRows(ds, Revision, 'a'),
    ];
    const rows = await preparedRows(
      this.manager,
      `SELECT ${l.columns}, ${d.columns}, ${r.columns}, ${a.columns},
              c.database_password_sealed AS c_database, c.redis_password_sealed AS c_redis, ${FINGERPRINT} AS fingerprint
         ${RENDERED_FROM}
        ORDER BY d.created_at, d.id, r.id`,
      [listenerId, workspaceId],
    );
    if (!rows.length) return null;
    const work: ListenerWork[] = [];
    for (const row of rows) {
      // One row per deployment: at most one revision of a deployment is DEPLOYING.
      if (row.d_id === null || work.at(-1)?.deployment.id === row.d_id) continue;
      work.push({
        deployment: d.read(row),
        deploying: row.r_id === null ? null : r.read(row),
        active: row.a_id === null ? null : a.read(row),
        sealed: row.c_database === null ? null : { database: row.c_database, redis: row.c_redis },
      });
    }
    return { listener: l.read(rows[0]), work, fingerprint: rows[0].fingerprint };
  }
}
