import { queryRows, type EntityManager } from '@slipway/db';

export type LogType = 'build' | 'deploy';

/** Postgres NOTIFY channel told the revision id whenever lines of it are stored (log follow). */
export const REVISION_LOGS_CHANNEL = 'slipway_revision_logs';

export interface LogLine {
  id: string;
  timestamp: string;
  level: string;
  message: string;
  /** The index of the instance that printed it (deploy logs); null for the rollout's own lines. */
  instance: number | null;
}

/** A line of the workspace-wide log listing: which deployment, revision and log it belongs to. */
export interface ScopedLogLine extends LogLine {
  deployment_id: string;
  revision_id: string;
  type: LogType;
}

/** Whose lines: one revision's, or a workspace's (optionally one deployment or revision of it). */
export type LogScope = { revisionId: string } | { workspaceId: string; deploymentId?: string; revisionId?: string };

/** The filters of every log endpoint (docs/api.md, Logs). */
export interface LogFilter {
  type?: LogType;
  /** Case-insensitive; `warning` is `warn`. */
  level?: string;
  /** Case-insensitive substring of the message. */
  query?: string;
  /** Only lines printed by the instance of this index. */
  instance?: number;
  /** Inclusive. */
  startTime?: Date;
  /** Exclusive. */
  endTime?: Date;
}

export interface LogPage {
  limit: number;
  /**
   * Exclusive cursor: the id of the last line already seen. The page continues strictly after
   * that line in (timestamp, id) order, so lines sharing its timestamp are neither repeated nor
   * skipped.
   */
  after?: string | null;
  order: 'asc' | 'desc';
}

const LEVEL_ALIASES: Record<string, string> = { warning: 'warn', err: 'error', critical: 'error', fatal: 'error' };

/** Escapes LIKE wildcards so a query matches its text literally. */
const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** Log lines of revisions (docs/api.md, Logs), appended by the builder and the deployer. */
export class RevisionLogRepository {
  constructor(private readonly manager: EntityManager) {}

  /** Appends lines in order; followers are told (on commit) through REVISION_LOGS_CHANNEL. */
  async append(
    revisionId: string,
    type: LogType,
    lines: Array<{ level: string; message: string }>,
    instance: number | null = null,
  ): Promise<void> {
    if (!lines.length) return;
    await this.manager.query(
      `WITH ins AS (
         INSERT INTO revision_logs (revision_id, type, level, message, instance)
         SELECT $1, $2, l.level, l.message, $5::smallint 
            FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS l(level, message, n) ORDER BY l.n
         RETURNING 1
       )
       SELECT pg_notify('${REVISION_LOGS_CHANNEL}', $1::text) FROM (SELECT count(*) FROM ins) c`,
      [revisionId, type, lines.map((l) => l.level), lines.map((l) => l.message), instance],
    );
  }

  /**
   * One page in (timestamp, id) order, `asc` or `desc`, continuing after the cursor; `next` is
   * the cursor of the next page when more lines exist already.
   */
  async page(
    scope: LogScope,
    filter: LogFilter,
    { limit, after, order }: LogPage,
  ): Promise<{ lines: ScopedLogLine[]; next: string | null }> {
    const params: unknown[] = [];
    const p = (value: unknown) => `$${params.push(value)}`;
    const where: string[] = [];
    let from = 'revision_logs l JOIN revisions r ON r.id = l.revision_id';
    if ('workspaceId' in scope) {
      from += ' JOIN deployments d ON d.id = r.deployment_id';
      where.push(`d.workspace_id = ${p(scope.workspaceId)}`);
      if (scope.deploymentId) where.push(`r.deployment_id = ${p(scope.deploymentId)}`);
      if (scope.revisionId) where.push(`l.revision_id = ${p(scope.revisionId)}`);
    } else {
      where.push(`l.revision_id = ${p(scope.revisionId)}`);
    }
    if (filter.type) where.push(`l.type = ${p(filter.type)}`);
    if (filter.level) {
      const level = filter.level.toLowerCase();
      where.push(`lower(l.level) = ${p(LEVEL_ALIASES[level] ?? level)}`);
    }
    if (filter.instance !== undefined) where.push(`l.instance = ${p(filter.instance)}`);
    if (filter.query) where.push(`l.message ILIKE ${p(`%${likeEscape(filter.query)}%`)} ESCAPE '\\'`);
    if (filter.startTime) where.push(`l.created_at >= ${p(filter.startTime)}`);
    if (filter.endTime) where.push(`l.created_at < ${p(filter.endTime)}`);
    const cmp = order === 'asc' ? '>' : '<';
    if (after) {
      // Compared in SQL: the cursor line's timestamp has microseconds a JS Date would drop.
      const cursor = p(after);
      where.push(
        `(l.created_at, l.id) ${cmp} COALESCE((SELECT (c.created_at, c.id) FROM revision_logs c WHERE c.id = ${cursor}::bigint), ` +
          // A cursor line that is gone (its revision deleted) no longer bounds the page.
          `(${order === 'asc' ? "'-infinity'" : "'infinity'"}::timestamptz, ${cursor}::bigint))`,
      );
    }
    const dir = order === 'asc' ? 'ASC' : 'DESC';
    const rows = await queryRows<{
      id: string;
      created_at: Date;
      level: string;
      message: string;
      instance: number | null;
      deployment_id: string;
      revision_id: string;
      type: LogType;
    }>(
      this.manager,
      `SELECT l.id, l.created_at, l.level, l.message, l.instance, r.deployment_id, l.revision_id, l.type
         FROM ${from} WHERE ${where.join(' AND ')}
        ORDER BY l.created_at ${dir}, l.id ${dir} LIMIT ${p(limit + 1)}`,
      params,
    );
    const lines = rows.slice(0, limit).map((r) => ({
      id: String(r.id),
      timestamp: r.created_at.toISOString(),
      level: r.level,
      message: r.message,
      instance: r.instance,
      deployment_id: r.deployment_id,
      revision_id: r.revision_id,
      type: r.type,
    }));
    return { lines, next: rows.length > limit ? lines.at(-1)!.id : null };
  }

  /** The last `count` lines, oldest first (for status messages of failed phases). */
  async tail(revisionId: string, type: LogType, count: number): Promise<string[]> {
    const rows = await queryRows<{ message: string }>(
      this.manager,
      `SELECT message FROM (
         SELECT id, message FROM revision_logs WHERE revision_id = $1 AND type = $2 ORDER BY id DESC LIMIT $3
       ) t ORDER BY id`,
      [revisionId, type, count],
    );
    return rows.map((r) => r.message);
  }
}
