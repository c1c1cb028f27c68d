/**
 * Where "Fork from here" starts a traced run's fork: its thread, its assistant and the checkpoint
 * it ran from. No imports, structural types only: the unit tests (test/console) load this file
 * as it is.
 */

/** What this reads of a traced run (`TracedRun`, api/types.ts). */
interface RunShape {
  thread_id?: string | null;
  extra?: { metadata?: Record<string, unknown> };
}

/** What this reads of a checkpoint of the thread's history (`ThreadState`, api/agent.ts). */
interface CheckpointShape {
  checkpoint: { checkpoint_id: string } | null;
  metadata: Record<string, unknown> | null;
  tasks?: Array<{ id: string }>;
}

export interface ForkPoint {
  threadId: string;
  assistantId: string;
  /** The task that ran the node (`<node>:<task id>` of its checkpoint namespace): the checkpoint it ran from has that task. */
  taskId: string | null;
  /** Else the checkpoint the run's metadata names (a run started from one). */
  checkpointId: string | null;
  /** Else (a graph's root run) the LangGraph run whose first checkpoint it starts from. */
  graphRunId: string | null;
  node: string | null;
}

const text = (run: RunShape, key: string): string | null => {
  const value = run.extra?.metadata?.[key];
  return typeof value === 'string' && value ? value : null;
};

/** The fork point of a traced run, or null when it names no thread, assistant or checkpoint. */
export function forkPointOf(run: RunShape): ForkPoint | null {
  const threadId = run.thread_id ?? text(run, 'thread_id');
  const assistantId = text(run, 'assistant_id') ?? text(run, 'graph_id');
  if (!threadId || !assistantId) return null;
  const checkpointId = text(run, 'checkpoint_id');
  const node = text(run, 'langgraph_node');
  const namespace = text(run, 'langgraph_checkpoint_ns');
  // A node of a subgraph (`parent:<id>|child:<id>`) has its checkpoints in the subgraph: not forked from here.
  const taskId = node && namespace && !namespace.includes('|') ? (namespace.split(':')[1] ?? null) : null;
  const graphRunId = !node ? text(run, 'run_id') : null;
  if (!checkpointId && !taskId && !graphRunId) return null;
  return { threadId, assistantId, taskId, checkpointId, graphRunId, node };
}

const stepOf = (s: CheckpointShape) => (typeof s.metadata?.step === 'number' ? s.metadata.step : Infinity);

/** Whether finding the fork point's checkpoint needs the thread's history. */
export const needsHistory = (point: ForkPoint) => !!point.taskId || (!point.checkpointId && !!point.graphRunId);

/**
 * The checkpoint id of the fork point, or null when `history` (newest first) does not have it. A
 * node run's own task finds it (a node inside a forked run also carries the fork's
 * `checkpoint_id`, which is not its own); else the checkpoint the run names; else the first
 * checkpoint of the graph run.
 */
export function checkpointOf(point: ForkPoint, history: CheckpointShape[]): string | null {
  if (point.taskId) {
    const found = history.find((s) => s.tasks?.some((t) => t.id === point.taskId));
    if (found?.checkpoint) return found.checkpoint.checkpoint_id;
  }
  if (point.checkpointId) return point.checkpointId;
  if (point.graphRunId) {
    const first = history
      .filter((s) => s.metadata?.run_id === point.graphRunId)
      .sort((a, b) => stepOf(a) - stepOf(b))[0];
    if (first?.checkpoint) return first.checkpoint.checkpoint_id;
  }
  return null;
}
