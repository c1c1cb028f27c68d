// A thread's state and history (LangGraph Server API: /threads/{id}/state, /history): read and
// written through the thread's graph and the checkpointer; the thread row keeps the latest values.
import type { RunnableConfig, ThreadsStateRepo } from '@langchain/langgraph-api/storage';
import { HTTPException } from 'hono/http-exception';
import type { Db } from './db.js';
import type { PgThreads } from './threads.js';
import {
  checkpointer,
  getGraph,
  getLangGraphCommand,
  graphStore,
  handleAuthEvent,
  isAuthMatching,
  type AuthContext,
} from './upstream.js';

const EMPTY_STATE = {
  values: {},
  next: [],
  config: {},
  metadata: undefined,
  createdAt: undefined,
  parentConfig: undefined,
  tasks: [],
};

export class PgThreadState implements ThreadsStateRepo {
  constructor(
    private readonly db: Db,
    private readonly threads: PgThreads,
  ) {}

  private graphOf(thread: { metadata?: Record<string, unknown>; config?: unknown }, accessContext: string) {
    return getGraph(thread.metadata!.graph_id as string, thread.config, {
      checkpointer,
      store: graphStore,
      accessContext,
    });
  }

  async get(config: RunnableConfig, options: { subgraphs?: boolean }, auth: AuthContext): Promise<any> {
    const threadId = config.configurable?.thread_id;
    const thread = threadId ? await this.threads.get(threadId, auth) : undefined;
    if (!thread || thread.metadata?.graph_id == null) return EMPTY_STATE;
    const graph = await this.graphOf(thread, 'threads.read');
    const result = await graph.getState(config, { subgraphs: options.subgraphs ?? false });
    if (result.metadata != null && result.metadata.checkpoint_ns === '') delete result.metadata.checkpoint_ns;
    return result;
  }

  /** The thread to update, checked: visible, writable, with a graph; optionally not running anything. */
  private async writable(config: RunnableConfig, auth: AuthContext, idle: boolean) {
    const threadId = config.configurable?.thread_id;
    const [filters] = await handleAuthEvent(auth, 'threads:update', { thread_id: threadId });
    const thread = threadId ? await this.threads.get(threadId, auth) : undefined;
    if (!thread) throw new HTTPException(404, { message: `Thread ${threadId} not found` });
    if (!isAuthMatching(thread.metadata, filters)) throw new HTTPException(403);
    if (idle) {
      const { rows } = await this.db.query(
        `SELECT 1 FROM slipway_agent_runs WHERE thread_id = $1 AND status IN ('pending', 'running') LIMIT 1`,
        [threadId],
      );
      if (rows.length) throw new HTTPException(409, { message: 'Thread is busy' });
    }
    const graphId = thread.metadata?.graph_id;
    if (graphId == null) throw new HTTPException(400, { message: `Thread ${threadId} has no graph ID` });
    config.configurable ??= {};
    config.configurable.graph_id ??= graphId;
    const updateConfig = structuredClone(config);
    updateConfig.configurable!.checkpoint_ns ??= '';
    return { threadId: threadId!, graph: await this.graphOf(thread, 'threads.update'), updateConfig };
  }

  private async saveValues(threadId: string, config: RunnableConfig, auth: AuthContext) {
    const state = await this.get(config, { subgraphs: false }, auth);
    await this.threads.setValues(threadId, state.values);
  }

  async post(config: RunnableConfig, values: any, asNode: string | undefined, auth: AuthContext) {
    const { threadId, graph, updateConfig } = await this.writable(config, auth, true);
    const next = await graph.updateState(updateConfig, values, asNode);
    await this.saveValues(threadId, config, auth);
    return { checkpoint: next.configurable };
  }

  async bulk(config: RunnableConfig, supersteps: Parameters<ThreadsStateRepo['bulk']>[1], auth: AuthContext) {
    if (!config.configurable?.thread_id) return [];
    const { threadId, graph, updateConfig } = await this.writable(config, auth, false);
    const next = await graph.bulkUpdateState(
      updateConfig,
      supersteps.map((step) => ({
        updates: step.updates.map((u) => ({
          values: u.command != null ? getLangGraphCommand(u.command) : u.values,
          asNode: u.as_node,
        })),
      })),
    );
    await this.saveValues(threadId, config, auth);
    return { checkpoint: next.configurable };
  }

  async list(
    config: RunnableConfig,
    options: Parameters<ThreadsStateRepo['list']>[1],
    auth: AuthContext,
  ): Promise<any[]> {
    const threadId = config.configurable?.thread_id;
    if (!threadId) return [];
    const [filters] = await handleAuthEvent(auth, 'threads:read', { thread_id: threadId });
    const thread = await this.threads.get(threadId, auth);
    if (!isAuthMatching(thread.metadata, filters) || thread.metadata?.graph_id == null) return [];
    const graph = await this.graphOf(thread, 'threads.read');
    const before =
      typeof options?.before === 'string' ? { configurable: { checkpoint_id: options.before } } : options?.before;
    const states = [];
    for await (const state of graph.getStateHistory(config, {
      limit: options?.limit ?? 10,
      before,
      filter: options?.metadata,
    }))
      states.push(state);
    return states;
  }
}
