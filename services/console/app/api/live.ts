/**
 * Live updates. The event stream when the server offers it (resumed with Last-Event-ID after a
 * drop), and polling whenever it does not or while it is down: the caller's `refresh` re-reads
 * the list or revision endpoints, so the page is right either way.
 */
import { ApiError, type Api } from './client';
import type { LiveEvent, LogEntry, LogPage } from './types';

export type LiveMode = 'connecting' | 'live' | 'polling';

export const POLL_MS = 2_000;
const RECONNECT_MS = 3_000;
/** While the stream is up, a full re-read now and then anyway: cheap insurance against a missed event. */
const LIVE_RESYNC_MS = 30_000;

export interface EventWatch {
  /** Called for each event of the stream. */
  onEvent: (event: LiveEvent) => void;
  /** Re-read everything: on every poll, and once each time the stream (re)connects. */
  refresh: () => void;
  onMode: (mode: LiveMode) => void;
}

/** Watches the workspace's events; returns the function that stops watching. */
export function watchEvents(api: Api, watch: EventWatch): () => void {
  const stop = new AbortController();
  let lastEventId: string | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const wait = (ms: number) => new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));

  const poll = async (until: number) => {
    watch.onMode('polling');
    while (!stop.signal.aborted && Date.now() < until) {
      await wait(POLL_MS);
      // A tab in the background costs the API nothing; it catches up once shown again.
      if (!stop.signal.aborted && !document.hidden) watch.refresh();
    }
  };

  let resync: ReturnType<typeof setInterval> | undefined;
  void (async () => {
    const { eventStream } = await api.features();
    while (!stop.signal.aborted) {
      if (!eventStream) {
        await poll(Number.POSITIVE_INFINITY);
        return;
      }
      try {
        await api.stream('/v2/events/stream', {
          lastEventId,
          signal: stop.signal,
          onOpen: () => {
            watch.onMode('live');
            watch.refresh();
            clearInterval(resync);
            resync = setInterval(watch.refresh, LIVE_RESYNC_MS);
          },
          onMessage: (message) => {
            if (message.id) lastEventId = message.id;
            const event = parseEvent(message.data, message.id, message.event);
            if (event) watch.onEvent(event);
          },
        });
      } catch (err) {
        clearInterval(resync);
        if (stop.signal.aborted) return;
        // A refused key will not get better by retrying fast: poll (the re-reads show the API's words).
        if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
          await poll(Number.POSITIVE_INFINITY);
          return;
        }
      }
      clearInterval(resync);
      // The stream ended or dropped: poll meanwhile, then resume where it stopped.
      if (!stop.signal.aborted) await poll(Date.now() + RECONNECT_MS);
    }
  })();

  return () => {
    stop.abort();
    clearTimeout(timer);
    clearInterval(resync);
  };
}

/** An event as the stream sends it; ids may sit at the top level or in its data. */
function parseEvent(data: string, id: string | null, name: string): LiveEvent | null {
  try {
    const parsed = JSON.parse(data) as LiveEvent & { payload?: Record<string, unknown> };
    const body = parsed.data ?? parsed.payload ?? null;
    const fromBody = (key: string) => (typeof body?.[key] === 'string' ? (body[key] as string) : null);
    return {
      ...parsed,
      id: parsed.id ?? id ?? '',
      type: parsed.type ?? name,
      deployment_id: parsed.deployment_id ?? fromBody('deployment_id'),
      revision_id: parsed.revision_id ?? fromBody('revision_id'),
      data: body,
    };
  } catch {
    return null;
  }
}

export interface LogFollow {
  deploymentId: string;
  revisionId: string;
  type: 'build' | 'deploy';
  onLines: (lines: LogEntry[]) => void;
  onMode: (mode: LiveMode) => void;
  onError: (message: string) => void;
  /** Whether to keep following: false once the revision is over and its log read to the end. */
  keepFollowing: () => boolean;
}

const PAGE = 1_000;

/**
 * Reads a revision's log from the start, then follows it: by the server's log stream when it
 * offers one, else by polling with the cursor of the last line (docs/api.md, Logs).
 */
export function followLog(api: Api, follow: LogFollow): () => void {
  const stop = new AbortController();
  let cursor: string | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const path = `/v2/deployments/${follow.deploymentId}/revisions/${follow.revisionId}/logs`;

  const readToEnd = async () => {
    for (;;) {
      const page = await api.get<LogPage>(
        path,
        { type: follow.type, order: 'asc', limit: PAGE, offset: cursor },
        stop.signal,
      );
      if (page.logs.length) {
        cursor = page.logs.at(-1)!.id;
        follow.onLines(page.logs);
      }
      if (page.logs.length < PAGE) return;
    }
  };

  void (async () => {
    const { logFollow } = await api.features();
    while (!stop.signal.aborted) {
      try {
        await readToEnd();
        if (!follow.keepFollowing()) {
          follow.onMode('polling');
          // Finished revisions rarely get lines; look again now and then.
          await new Promise<void>((resolve) => (timer = setTimeout(resolve, POLL_MS * 5)));
          continue;
        }
        if (logFollow) {
          await api.stream(path, {
            query: { type: follow.type, follow: true },
            lastEventId: cursor,
            signal: stop.signal,
            onOpen: () => follow.onMode('live'),
            onMessage: (message) => {
              try {
                const line = JSON.parse(message.data) as LogEntry;
                if (typeof line.message !== 'string') return;
                line.id ??= message.id ?? '';
                cursor = line.id || cursor;
                follow.onLines([line]);
              } catch {
                // not a log line (a status or end marker): nothing to show
              }
            },
          });
        }
      } catch (err) {
        if (stop.signal.aborted) return;
        follow.onError(err instanceof Error ? err.message : String(err));
        if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429) return;
      }
      if (stop.signal.aborted) return;
      follow.onMode('polling');
      await new Promise<void>((resolve) => (timer = setTimeout(resolve, POLL_MS)));
    }
  })();

  return () => {
    stop.abort();
    clearTimeout(timer);
  };
}
