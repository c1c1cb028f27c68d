/**
 * A deployment's own LangGraph Server API, called through the api's gateway
 * (`/v2/deployments/{id}/agent/<path>`) with the signed-in user's key in `X-Api-Key`: the api
 * forwards the call to the deployment's serving proxy, which checks the key again and strips it
 * before the app sees it, and passes back only the agent's JSON. The browser never calls an app's
 * origin. Plain `fetch`, the few calls the console makes (paths and bodies as the official SDK
 * sends them).
 */
import { ApiError, detailText } from './client';

export type ThreadStatus = 'idle' | 'busy' | 'interrupted' | 'error';

export interface Interrupt {
  value?: unknown;
  id?: string;
}

export interface Thread {
  thread_id: string;
  created_at: string;
  updated_at: string;
  status: ThreadStatus;
  metadata: Record<string, unknown> | null;
  values?: unknown;
  /** Pending interrupts by task id. */
  interrupts?: Record<string, Interrupt[]>;
}

export interface Checkpoint {
  thread_id?: string;
  checkpoint_ns?: string;
  checkpoint_id: string;
}

export interface ThreadTask {
  id: string;
  name: string;
  interrupts?: Interrupt[];
}

export interface ThreadState {
  values: unknown;
  next: string[];
  checkpoint: Checkpoint | null;
  parent_checkpoint?: Checkpoint | null;
  metadata: Record<string, unknown> | null;
  created_at: string | null;
  tasks?: ThreadTask[];
}

export interface AgentRun {
  run_id: string;
  thread_id: string;
  assistant_id: string;
  created_at: string;
  status: string;
  metadata?: Record<string, unknown>;
}

export interface GraphNode {
  id: string | number;
  name?: string;
  type?: string;
  data?: unknown;
}

export interface GraphEdge {
  source: string | number;
  target: string | number;
  conditional?: boolean;
  data?: unknown;
}

export interface AgentGraph {
  nodes: GraphNode[];
  edges: GraphEdge[];
}

export interface Assistant {
  assistant_id: string;
  graph_id: string;
  name?: string;
  version?: number;
  description?: string | null;
  created_at: string;
  updated_at: string;
}

export interface Cron {
  cron_id: string;
  assistant_id: string;
  thread_id?: string | null;
  schedule: string;
  timezone?: string | null;
  enabled?: boolean;
  next_run_date?: string | null;
  end_time?: string | null;
  created_at: string;
}

/** What a run is started with: an input, a resume command, a checkpoint to fork from. */
export interface RunRequest {
  assistant_id: string;
  input?: unknown;
  command?: { resume: unknown };
  checkpoint_id?: string;
}

const segment = encodeURIComponent;

export class AgentApi {
  constructor(
    /** The gateway's base for one deployment (`<api>/v2/deployments/<id>/agent`, no trailing slash). */
    readonly url: string,
    private readonly key: string,
    /** The credential a graph with its own auth handler expects (sent as its `Authorization`), if the user gave one. */
    private readonly agentCredential: string | null = null,
  ) {}

  async request<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    let res: Response;
    try {
      res = await fetch(this.url.replace(/\/$/, '') + path, {
        method,
        headers: {
          'X-Api-Key': this.key,
          ...(this.agentCredential ? { 'X-Agent-Authorization': this.agentCredential } : {}),
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
        credentials: 'omit',
        cache: 'no-store',
      });
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err;
      throw new ApiError(0, 'The Slipway API could not be reached from this browser.');
    }
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = null;
    }
    if (!res.ok) {
      // The agent says what went wrong in `message` (LangGraph's errors), the gateway in `detail`.
      const message = (parsed as { message?: unknown } | null)?.message;
      throw new ApiError(res.status, typeof message === 'string' && message ? message : detailText(res.status, parsed));
    }
    return parsed as T;
  }

  /** Threads, newest first (`status` '' for any). */
  searchThreads(options: { status: string; limit: number; offset: number }, signal?: AbortSignal): Promise<Thread[]> {
    return this.request(
      'POST',
      '/threads/search',
      {
        limit: options.limit,
        offset: options.offset,
        sort_by: 'updated_at',
        sort_order: 'desc',
        ...(options.status ? { status: options.status } : {}),
      },
      signal,
    );
  }

  thread(threadId: string, signal?: AbortSignal): Promise<Thread> {
    return this.request('GET', `/threads/${segment(threadId)}`, undefined, signal);
  }

  state(threadId: string, signal?: AbortSignal): Promise<ThreadState> {
    return this.request('GET', `/threads/${segment(threadId)}/state`, undefined, signal);
  }

  /** The thread's checkpoints, newest first. */
  history(threadId: string, limit: number, signal?: AbortSignal): Promise<ThreadState[]> {
    return this.request('POST', `/threads/${segment(threadId)}/history`, { limit }, signal);
  }

  runs(threadId: string, limit: number, signal?: AbortSignal): Promise<AgentRun[]> {
    return this.request('GET', `/threads/${segment(threadId)}/runs?limit=${limit}`, undefined, signal);
  }

  /** A new run on the thread (in the background: it answers once the run is created). */
  createRun(threadId: string, run: RunRequest): Promise<AgentRun> {
    return this.request('POST', `/threads/${segment(threadId)}/runs`, run);
  }

  graph(assistantId: string, signal?: AbortSignal): Promise<AgentGraph> {
    return this.request('GET', `/assistants/${segment(assistantId)}/graph`, undefined, signal);
  }

  deleteThread(threadId: string): Promise<unknown> {
    return this.request('DELETE', `/threads/${segment(threadId)}`);
  }

  /** Assistants, most recently updated first. */
  searchAssistants(limit: number, signal?: AbortSignal): Promise<Assistant[]> {
    return this.request(
      'POST',
      '/assistants/search',
      { limit, offset: 0, sort_by: 'updated_at', sort_order: 'desc' },
      signal,
    );
  }

  /** An assistant's versions, newest first. */
  assistantVersions(assistantId: string, signal?: AbortSignal): Promise<Assistant[]> {
    return this.request('POST', `/assistants/${segment(assistantId)}/versions`, { limit: 20 }, signal);
  }

  /** Scheduled runs (crons), soonest first. */
  searchCrons(limit: number, signal?: AbortSignal): Promise<Cron[]> {
    return this.request(
      'POST',
      '/runs/crons/search',
      { limit, offset: 0, sort_by: 'next_run_date', sort_order: 'asc' },
      signal,
    );
  }

  /** Pauses (`enabled` false) or resumes a cron. */
  setCronEnabled(cronId: string, enabled: boolean): Promise<Cron> {
    return this.request('PATCH', `/runs/crons/${segment(cronId)}`, { enabled });
  }

  deleteCron(cronId: string): Promise<unknown> {
    return this.request('DELETE', `/runs/crons/${segment(cronId)}`);
  }
}

/** The interrupts a thread waits on, from its state's tasks (or the thread's own map). */
export function pendingInterrupts(state: ThreadState | null, thread: Thread | null): Interrupt[] {
  const fromTasks = (state?.tasks ?? []).flatMap((t) => t.interrupts ?? []);
  if (fromTasks.length) return fromTasks;
  return Object.values(thread?.interrupts ?? {}).flat();
}

/**
 * Text typed as JSON, parsed; empty text is `undefined` when `optional`. Throws an Error in words
 * when it is no JSON.
 */
export function parseJsonInput(text: string, optional: boolean): unknown {
  if (!text.trim()) {
    if (optional) return undefined;
    throw new Error('Type a JSON value (a string needs its quotes: "yes").');
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`That is no JSON: ${(err as Error).message}`);
  }
}
