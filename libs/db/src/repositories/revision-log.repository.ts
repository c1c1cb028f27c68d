import type { EntityManager } from 'typeorm';
import { queryRows } from '../sql.js';

export type LogType = 'build' | 'deploy';

export interface LogLine {
  id: string;
  timestamp: string;
  level: string;
  message: string;
}

export interface LogPage {
  limit: number;
  /** Exclusive cursor: the id of the last line of the previous page. */
  after?: string | null;
  order: 'asc' | 'desc';
}

/** Log lines of revisions (CONTRACT C5 logs), appended by the builder and the deployer. */
export class RevisionLogRepository {
  constructor(private readonly manager: EntityManager) {}

  async append(revisionId: string, type: LogType, lines: Array<{ level: string; message: string }>): Promise<void> {
    if (!lines.length) return;
    await this.manager.query(
      `INSERT INTO revision_logs (revision_id, type, level, message)
       SELECT $1, $2, l.level, l.message FROM unnest($3::text[], $4::text[]) AS l(level, message)`,
      [revisionId, type, lines.map((l) => l.level), lines.map((l) => l.message)],
    );
  }

  /** One page in `order`, continuing after the cursor; `next` is the cursor of the next page, if any. */
  async page(revisionId: string, type: LogType, { limit, after, order }: LogPage): Promise<{ lines: LogLine[]; next: string | null }> {
    const cmp = order === 'asc' ? '>' : '<';
    const rows = await queryRows<{ id: string; created_at: Date; level: string; message: string }>(
      this.manager,
      `SELECT id, created_at, level, message FROM revision_logs
        WHERE revision_id = $1 AND type = $2 ${after ? `AND id ${cmp} $4` : ''}
        ORDER BY id ${order === 'asc' ? 'ASC' : 'DESC'} LIMIT $3`,
      after ? [revisionId, type, limit + 1, after] : [revisionId, type, limit + 1],
    );
    const lines = rows.slice(0, limit).map((r) => ({ id: String(r.id), timestamp: r.created_at.toISOString(), level: r.level, message: r.message }));
    return { lines, next: rows.length > limit ? lines.at(-1)!.id : null };
  }

  /** The last `count` lines, oldest first (for status messages of failed phases). */
  async tail(revisionId: string, type: LogType, count: number): Promise<string[]> {
    const rows = await queryRows<{ message: string }>(
      this.manager,
      `SELECT message FROM (SELECT id, message FROM revision_logs WHERE revision_id = $1 AND type = $2 ORDER BY id DESC LIMIT $3) t ORDER BY id`,
      [revisionId, type, count],
    );
    return rows.map((r) => r.message);
  }
}
