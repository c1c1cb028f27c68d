/**
 * A deployment's log across its revisions (`GET /v2/deployment-logs`, docs/api.md, Logs): the
 * serving revision's instances and rollout, and the builds of newer revisions, interleaved by
 * time. Read from its newest `tail` lines, then followed: by the server's stream when it offers
 * one (resumed after a drop from the last line received), else by polling after that line.
 *
 * Across logs, two writers' lines can commit out of timestamp order (docs/api.md), and a
 * follower's cursor may then pass a line committed a moment late. So every few seconds the lines
 * since the previous re-read (less a margin far beyond an insert's commit delay) are read again;
 * the caller skips the ids it already has.
 */
import { ApiError, type Api } from './client';
import { POLL_MS, type LiveMode } from './live';
import type { LogEntry } from './types';

/** A line of the deployment's log, with the revision and log it belongs to. */
export interface DeploymentLogEntry extends LogEntry {
  deployment_id: string;
  revision_id: string;
  type: 'build' | 'deploy';
}

export interface DeploymentLogFollow {
  deploymentId: string;
  /** How many of the newest lines to read first (older ones stay on the revisions' own pages). */
  tail: number;
  /** New lines, oldest first; a re-read may hand over lines again (the same ids). */
  onLines: (lines: DeploymentLogEntry[]) => void;
  onMode: (mode: LiveMode) => void;
  /** An error to show, or null once reading works again. */
  onError: (message: string | null) => void;
}

const PATH = '/v2/deployment-logs';
const PAGE = 1_000;
const RECONNECT_MS = 3_000;
const RESYNC_MS = 10_000;
/** How far before the previous re-read's newest line the next one starts. */
const OVERLAP_MS = 5_000;
/** A re-read reads at most this many pages. */
const RESYNC_PAGES = 5;

const isLine = (value: unknown): value is DeploymentLogEntry =>
  !!value &&
  typeof (value as DeploymentLogEntry).message === 'string' &&
  typeof (value as DeploymentLogEntry).revision_id === 'string';

/** Follows the deployment's log; returns the function that stops following. */
export function followDeploymentLog(api: Api, follow: DeploymentLogFollow): () => void {
  const stop = new AbortController();
  const { signal } = stop;
  // The id of the last line handed over: the stream and the pages continue strictly after it.
  let cursor: string | null = null;
  // The newest line's time: where the next re-read looks back from.
  let newest = '';
  let timer: ReturnType<typeof setTimeout> | undefined;
  let resync: ReturnType<typeof setInterval> | undefined;
  // Where the next re-read starts (less the margin): the newest line's time when the previous
  // one began, or, before any, when the tail was read (or the first line came, for an empty log).
  let mark = '';
  const handOver = (lines: DeploymentLogEntry[]) => {
    if (!lines.length) return;
    if (!mark) mark = lines.reduce((t, l) => (l.timestamp < t ? l.timestamp : t), lines[0]!.timestamp);
    for (const l of lines) if (l.timestamp > newest) newest = l.timestamp;
    follow.onLines(lines);
  };
  const wait = (ms: number) => new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  const query = { deployment_id: follow.deploymentId };

  const readTail = async () => {
    const page = await api.get<{ logs: DeploymentLogEntry[] }>(
      PATH,
      { ...query, order: 'desc', limit: Math.min(follow.tail, PAGE) },
      signal,
    );
    const lines = page.logs.reverse();
    if (lines.length) {
      cursor = lines.at(-1)!.id;
      handOver(lines);
    }
  };

  const readNew = async () => {
    for (;;) {
      const page = await api.get<{ logs: DeploymentLogEntry[] }>(
        PATH,
        { ...query, order: 'asc', limit: PAGE, offset: cursor },
        signal,
      );
      if (page.logs.length) {
        cursor = page.logs.at(-1)!.id;
        handOver(page.logs);
      }
      if (page.logs.length < PAGE) return;
    }
  };

  const stream = () =>
    api.stream(PATH, {
      query: { ...query, follow: true },
      lastEventId: cursor,
      signal,
      onOpen: () => {
        follow.onMode('live');
        follow.onError(null);
      },
      onMessage: (message) => {
        if (message.event !== 'message') return;
        try {
          const line = JSON.parse(message.data) as unknown;
          if (!isLine(line)) return;
          line.id ??= message.id ?? '';
          cursor = line.id || cursor;
          handOver([line]);
        } catch {
          // not a line: nothing to show
        }
      },
    });

  const readAgain = async () => {
    if (signal.aborted || document.hidden) return;
    const from = mark;
    if (!from) return;
    mark = newest;
    const since = new Date(Date.parse(from) - OVERLAP_MS).toISOString();
    let after: string | null = null;
    try {
      for (let i = 0; i < RESYNC_PAGES; i++) {
        const page: { logs: DeploymentLogEntry[] } = await api.get(
          PATH,
          { ...query, order: 'asc', limit: PAGE, start_time: since, offset: after },
          signal,
        );
        handOver(page.logs);
        if (page.logs.length < PAGE) return;
        after = page.logs.at(-1)!.id;
      }
    } catch {
      // the follow loop says what is wrong; this was insurance only
    }
  };

  void (async () => {
    const { logFollow } = await api.features();
    if (signal.aborted) return;
    resync = setInterval(readAgain, RESYNC_MS);
    let started = false;
    while (!signal.aborted) {
      try {
        if (!started) {
          await readTail();
          mark = newest;
          started = true;
        }
        if (logFollow) {
          await stream();
        } else {
          follow.onMode('polling');
          await readNew();
          follow.onError(null);
        }
      } catch (err) {
        if (signal.aborted) return;
        follow.onError(
          err instanceof ApiError ? err.message : 'The log stream was cut off: reconnecting in a few seconds.',
        );
        // A refusal (no access, a deployment gone) will not change by asking again.
        if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429) {
          follow.onMode('polling');
          return;
        }
      }
      if (signal.aborted) return;
      // The stream never ends on its own: it ended or dropped, so wait a little and resume after the last line.
      follow.onMode(logFollow ? 'connecting' : 'polling');
      await wait(logFollow ? RECONNECT_MS : POLL_MS);
    }
  })();

  return () => {
    stop.abort();
    clearTimeout(timer);
    clearInterval(resync);
  };
}
