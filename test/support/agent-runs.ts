import { Client } from '@langchain/langgraph-sdk';
import { expect } from 'vitest';
import type { Instance } from './agent-projects.js';
import { eventually } from './service-process.js';

/**
 * Runs of the slow fixture graph (test/fixtures/agent-server/slow-graph.ts) seen through the
 * official SDK: their input, their events, and what the events say about who ran them.
 */

export interface Tick {
  id?: string;
  event: string;
  data: any;
}

/** Input of a run whose three nodes each take `ticks` × `tickMs`. */
export const slowInput = (label: string, ticks: number, tickMs: number) => ({
  input: { steps: [label], ticks, tick_ms: tickMs },
  streamMode: ['custom' as const],
});

/**
 * Every event of a run through `c`, from its start (or after `lastEventId`), until the run's
 * stream ends; early once `limit` events came or `until` holds for those so far.
 */
export async function joinAll(
  c: Client,
  threadId: string,
  runId: string,
  options: { lastEventId?: string; limit?: number; until?: (events: Tick[]) => boolean } = {},
) {
  const events: Tick[] = [];
  for await (const chunk of c.runs.joinStream(threadId, runId, { lastEventId: options.lastEventId })) {
    events.push(chunk as Tick);
    if ((options.limit && events.length >= options.limit) || options.until?.(events)) break;
  }
  return events;
}

/** The attempt of each start of the run (one `metadata` event per claim). */
export const attempts = (events: Tick[]) =>
  events.filter((e) => e.event === 'metadata').map((e) => e.data.attempt as number);

/** The graph's custom events: which node, which tick, and the PORT of the process that ran it. */
export const customs = (events: Tick[]) =>
  events.filter((e) => e.event === 'custom').map((e) => e.data as { node: string; i: number; port: string });

/** An SDK client of one instance's own address (no key: it is not behind the serving edge). */
export const clientOf = (instance: Instance) => new Client({ apiUrl: instance.url });

export const statusOf = async (c: Client, threadId: string, runId: string) =>
  (await c.runs.get(threadId, runId)).status;

/** The process running a run, one of `candidates`: the port in its latest custom event, once there is one. */
export async function runnerAmong(
  c: Client,
  threadId: string,
  runId: string,
  candidates: () => Promise<Instance[]>,
): Promise<Instance> {
  const port = await eventually(
    async () => {
      const seen = customs(await joinAll(c, threadId, runId, { limit: 2 }));
      return seen.at(-1)?.port;
    },
    (p) => p != null,
    60_000,
    200,
  );
  const found = (await candidates()).find((i) => String(i.port) === String(port));
  expect(found, `process on port ${port}`).toBeDefined();
  return found!;
}

/**
 * Waits until the run is neither pending nor running, then expects it to have succeeded whole:
 * its thread's steps are `label` and the three nodes.
 */
export async function expectSucceededWhole(c: Client, threadId: string, runId: string, label: string) {
  await eventually(
    () => statusOf(c, threadId, runId),
    (s) => !['pending', 'running'].includes(s),
    90_000,
    500,
  );
  expect(await statusOf(c, threadId, runId)).toBe('success');
  expect((await c.threads.getState(threadId)).values).toMatchObject({ steps: [label, 'first', 'second', 'third'] });
}

/**
 * Kills the process group `pid` (SIGKILL) once the run's second node runs (its first is
 * checkpointed), waits until the run succeeds elsewhere, and returns the run's events: each
 * start's `metadata` and what the resumed attempt emitted (none of it the first node's).
 */
export async function killDuringSecondNode(c: Client, threadId: string, runId: string, pid: number, label: string) {
  await joinAll(c, threadId, runId, { until: (events) => customs(events).some((t) => t.node === 'second') });
  process.kill(-pid, 'SIGKILL');
  await eventually(
    () => statusOf(c, threadId, runId),
    (s) => s === 'success',
    60_000,
    250,
  );
  expect((await c.threads.getState(threadId)).values).toMatchObject({ steps: [label, 'first', 'second', 'third'] });
  const events = await joinAll(c, threadId, runId);
  expect(attempts(events)).toEqual([1, 2]);
  const resumed = customs(events.slice(events.findIndex((e) => e.event === 'metadata' && e.data.attempt === 2)));
  expect(resumed.some((t) => t.node === 'first')).toBe(false);
  return resumed;
}

/** Runs `pending` or `running` on any thread the client sees (none once a rollout is over). */
export async function openRuns(c: Client) {
  const open = [];
  for (const t of await c.threads.search({ limit: 100 })) {
    open.push(
      ...(await c.runs.list(t.thread_id, { limit: 100 })).filter(
        (r) => r.status === 'pending' || r.status === 'running',
      ),
    );
  }
  return open;
}

/** Nothing is left pending or running, on any thread, through any of `clients`. */
export async function expectNoOpenRuns(clients: Client[]) {
  for (const c of clients) expect(await openRuns(c)).toEqual([]);
}
