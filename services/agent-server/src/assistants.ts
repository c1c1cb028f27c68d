// Assistants and their versions, one row each (LangGraph Server API: /assistants).
import type { Assistant, AssistantsRepo, AssistantVersion } from '@langchain/langgraph-api/storage';
import { HTTPException } from 'hono/http-exception';
import { inTransaction, type Db } from './db.js';
import { json, orderBy, toAssistant, toAssistantVersion, Where } from './rows.js';
import { handleAuthEvent, isAuthMatching, type AuthContext } from './upstream.js';

const notFound = () => new HTTPException(404, { message: 'Assistant not found' });
const SORTS = ['assistant_id', 'created_at', 'updated_at', 'name', 'graph_id'] as const;

export class PgAssistants implements AssistantsRepo {
  constructor(private readonly db: Db) {}

  private searchWhere(
    options: { graph_id?: string; name?: string; metadata?: Record<string, unknown> },
    filters: Record<string, unknown> | undefined,
  ): Where {
    const where = new Where();
    if (options.graph_id != null) where.add('graph_id = ?', options.graph_id);
    if (options.name != null) where.add(`strpos(lower(name), lower(?)) > 0`, options.name);
    return where.contains('metadata', options.metadata).auth('metadata', filters);
  }

  async *search(options: Parameters<AssistantsRepo['search']>[0], auth: AuthContext) {
    const [filters] = await handleAuthEvent(auth, 'assistants:search', {
      graph_id: options.graph_id,
      metadata: options.metadata,
      limit: options.limit,
      offset: options.offset,
    });
    const where = this.searchWhere(options, filters);
    const { rows } = await this.db.query(
      `SELECT * FROM slipway_agent_assistants ${where}
       ${orderBy(options.sort_by, SORTS, 'created_at', options.sort_order, 'assistant_id')}
       LIMIT ${where.param(options.limit)} OFFSET ${where.param(options.offset)}`,
      where.params,
    );
    // The page's size, as the server's pagination headers read it (a full page: there may be more).
    // Never a count of every match: a search costs its page, whatever the number of records.
    const total = rows.length;
    for (const row of rows) yield { assistant: toAssistant(row), total };
  }

  async count(options: Parameters<AssistantsRepo['count']>[0], auth: AuthContext): Promise<number> {
    const [filters] = await handleAuthEvent(auth, 'assistants:search', {
      graph_id: options.graph_id,
      metadata: options.metadata,
      limit: 0,
      offset: 0,
    });
    const where = this.searchWhere(options, filters);
    const { rows } = await this.db.query(
      `SELECT count(*)::int AS n FROM slipway_agent_assistants ${where}`,
      where.params,
    );
    return rows[0].n;
  }

  /** The assistant, if the auth filters let the caller see it. */
  private async visible(
    assistantId: string,
    filters: Record<string, unknown> | undefined,
    db: Pick<Db, 'query'> = this.db,
    lock = '',
  ): Promise<Assistant> {
    const { rows } = await db.query(`SELECT * FROM slipway_agent_assistants WHERE assistant_id = $1 ${lock}`, [
      assistantId,
    ]);
    if (!rows.length || !isAuthMatching(rows[0].metadata, filters)) throw notFound();
    return toAssistant(rows[0]);
  }

  async get(assistantId: string, auth: AuthContext): Promise<Assistant> {
    const [filters] = await handleAuthEvent(auth, 'assistants:read', { assistant_id: assistantId });
    return this.visible(assistantId, filters);
  }

  async put(assistantId: string, options: Parameters<AssistantsRepo['put']>[1], auth: AuthContext): Promise<Assistant> {
    const [filters, mutable] = await handleAuthEvent(auth, 'assistants:create', {
      assistant_id: assistantId,
      ...options,
    });
    return inTransaction(this.db, async (tx) => {
      const name = options.name || options.graph_id;
      const values = [
        assistantId,
        options.graph_id,
        name,
        options.description ?? null,
        json(options.config ?? {}),
        json(options.context ?? {}),
        json(mutable.metadata ?? {}),
      ];
      const { rows } = await tx.query(
        `INSERT INTO slipway_agent_assistants (assistant_id, graph_id, name, description, config, context, metadata)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (assistant_id) DO NOTHING RETURNING *`,
        values,
      );
      if (!rows.length) {
        const existing = await tx.query('SELECT * FROM slipway_agent_assistants WHERE assistant_id = $1', [
          assistantId,
        ]);
        if (!isAuthMatching(existing.rows[0]?.metadata, filters) || options.if_exists === 'raise') {
          throw new HTTPException(409, { message: 'Assistant already exists' });
        }
        return toAssistant(existing.rows[0]);
      }
      await tx.query(
        `INSERT INTO slipway_agent_assistant_versions (assistant_id, version, graph_id, name, description, ` +
          `config, context, metadata, created_at)
         VALUES ($1, 1, $2, $3, $4, $5, $6, $7, $8)`,
        [...values, rows[0].created_at],
      );
      return toAssistant(rows[0]);
    });
  }

  async patch(
    assistantId: string,
    options: Parameters<AssistantsRepo['patch']>[1],
    auth: AuthContext,
  ): Promise<Assistant> {
    const [filters, mutable] = await handleAuthEvent(auth, 'assistants:update', {
      assistant_id: assistantId,
      ...options,
    });
    return inTransaction(this.db, async (tx) => {
      const current = await this.visible(assistantId, filters, tx, 'FOR UPDATE');
      const { rows: latest } = await tx.query(
        'SELECT max(version) AS v FROM slipway_agent_assistant_versions WHERE assistant_id = $1',
        [assistantId],
      );
      const next: Assistant = {
        ...current,
        graph_id: options.graph_id ?? current.graph_id,
        config: options.config ?? current.config,
        context: options.context ?? current.context,
        name: options.name ?? current.name,
        description: options.description ?? current.description,
        metadata: mutable.metadata != null ? { ...current.metadata, ...mutable.metadata } : current.metadata,
        version: Number(latest[0].v ?? 0) + 1,
      };
      const values = [
        assistantId,
        next.version,
        next.graph_id,
        next.name,
        next.description,
        json(next.config),
        json(next.context ?? null),
        json(next.metadata),
      ];
      const { rows } = await tx.query(
        `UPDATE slipway_agent_assistants SET version = $2, graph_id = $3, name = $4, description = $5, ` +
          `config = $6, context = $7, metadata = $8, updated_at = now()
         WHERE assistant_id = $1 RETURNING *`,
        values,
      );
      await tx.query(
        `INSERT INTO slipway_agent_assistant_versions (assistant_id, version, graph_id, name, description, ` +
          `config, context, metadata, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [...values, rows[0].updated_at],
      );
      return toAssistant(rows[0]);
    });
  }

  async delete(assistantId: string, deleteThreads: boolean, auth: AuthContext): Promise<string[]> {
    const [filters] = await handleAuthEvent(auth, 'assistants:delete', { assistant_id: assistantId });
    return inTransaction(this.db, async (tx) => {
      await this.visible(assistantId, filters, tx, 'FOR UPDATE');
      await tx.query('DELETE FROM slipway_agent_runs WHERE assistant_id = $1', [assistantId]);
      if (deleteThreads)
        await tx.query(`DELETE FROM slipway_agent_threads WHERE metadata @> $1::jsonb`, [
          json({ assistant_id: assistantId }),
        ]);
      await tx.query('DELETE FROM slipway_agent_assistants WHERE assistant_id = $1', [assistantId]);
      return [assistantId];
    });
  }

  async setLatest(assistantId: string, version: number, auth: AuthContext): Promise<Assistant> {
    const [filters] = await handleAuthEvent(auth, 'assistants:update', { assistant_id: assistantId, version });
    return inTransaction(this.db, async (tx) => {
      await this.visible(assistantId, filters, tx, 'FOR UPDATE');
      const { rows } = await tx.query(
        `UPDATE slipway_agent_assistants a SET config = v.config, metadata = v.metadata, version = v.version, ` +
          `name = v.name, updated_at = now()
           FROM slipway_agent_assistant_versions v
          WHERE a.assistant_id = $1 AND v.assistant_id = $1 AND v.version = $2 RETURNING a.*`,
        [assistantId, version],
      );
      if (!rows.length) throw new HTTPException(404, { message: 'Assistant version not found' });
      return toAssistant(rows[0]);
    });
  }

  async getVersions(
    assistantId: string,
    options: Parameters<AssistantsRepo['getVersions']>[1],
    auth: AuthContext,
  ): Promise<AssistantVersion[]> {
    const [filters] = await handleAuthEvent(auth, 'assistants:read', { assistant_id: assistantId });
    const where = new Where()
      .add('assistant_id = ?', assistantId)
      .contains('metadata', options.metadata)
      .auth('metadata', filters);
    const { rows } = await this.db.query(
      `SELECT * FROM slipway_agent_assistant_versions ${where} ORDER BY version DESC ` +
        `LIMIT ${where.param(options.limit)} OFFSET ${where.param(options.offset)}`,
      where.params,
    );
    return rows.map(toAssistantVersion);
  }
}
