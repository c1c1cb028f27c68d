// Run events across instances, through the deployment's own Redis (REDIS_URI; every key and
// channel under its REDIS_PREFIX, the only ones its ACL user may touch):
// - each run's events go to a capped Redis stream kept STREAM_TTL_S after its last event, so a
//   join on any instance reads them all, and a re-join with Last-Event-ID exactly the rest (the
//   ids are the stream's, the same on every instance);
// - one pub/sub channel says "run X has new events", waking the joiners of every instance;
// - one channel carries cancellations to the instance that runs the run, one wakes idle workers.
import type { Redis } from 'ioredis';

const STREAM_TTL_S = 120;
const STREAM_MAX_EVENTS = 100_000;
const END = '__end__';

export interface StreamEvent {
  id: string;
  event: string;
  data: unknown;
  normalized?: boolean;
}

export type CancelAction = 'interrupt' | 'rollback';

export class RunStreams {
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly idleWorkers = new Set<() => void>();
  private readonly channels: { events: string; cancel: string; wake: string };
  onCancel: (runId: string, action: CancelAction) => void = () => {};

  constructor(
    private readonly redis: Redis,
    private readonly subscriber: Redis,
    private readonly prefix: string,
  ) {
    this.channels = {
      events: `${prefix}:agent:events`,
      cancel: `${prefix}:agent:cancel`,
      wake: `${prefix}:agent:wake`,
    };
  }

  async start(): Promise<void> {
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.channels.events) for (const wake of this.waiters.get(message) ?? []) wake();
      else if (channel === this.channels.wake) this.wakeWorkers();
      else if (channel === this.channels.cancel) {
        const { run_id, action } = JSON.parse(message);
        this.onCancel(run_id, action);
      }
    });
    await this.subscriber.subscribe(this.channels.events, this.channels.cancel, this.channels.wake);
  }

  private key(runId: string): string {
    return `${this.prefix}:agent:run:${runId}:events`;
  }

  /** Appends an event to the run's stream and wakes its joiners everywhere. */
  async publish(runId: string, event: string, payload: string, normalized?: boolean): Promise<void> {
    const key = this.key(runId);
    const fields =
      normalized != null ? ['e', event, 'd', payload, 'n', normalized ? '1' : '0'] : ['e', event, 'd', payload];
    await this.redis
      .multi()
      .xadd(key, 'MAXLEN', '~', String(STREAM_MAX_EVENTS), '*', ...fields)
      .expire(key, STREAM_TTL_S)
      .publish(this.channels.events, runId)
      .exec();
  }

  /** Marks the end of the run's events (it finished, failed or was interrupted). */
  end(runId: string): Promise<void> {
    return this.publish(runId, END, 'null');
  }

  /** Asks whichever instance runs `runId` to stop it. */
  async cancel(runId: string, action: CancelAction): Promise<void> {
    await this.redis.publish(this.channels.cancel, JSON.stringify({ run_id: runId, action }));
  }

  /** Wakes the idle workers of every instance: a run is waiting. */
  async wake(): Promise<void> {
    await this.redis.publish(this.channels.wake, '1');
  }

  private wakeWorkers(): void {
    for (const wake of [...this.idleWorkers]) wake();
  }

  /** Resolves when another run may be waiting, or after `ms`. */
  idle(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.idleWorkers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.idleWorkers.add(done);
    });
  }

  /** Resolves true when the run has new events, false after `ms` or on `signal`; `cancel` stops waiting. */
  private waitForEvents(
    runId: string,
    ms: number,
    signal?: AbortSignal,
  ): { promise: Promise<boolean>; cancel: () => void } {
    let set = this.waiters.get(runId);
    if (!set) this.waiters.set(runId, (set = new Set()));
    const waiters = set;
    let resolve!: (woke: boolean) => void;
    const promise = new Promise<boolean>((r) => (resolve = r));
    const done = (woke: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      waiters.delete(wake);
      if (!waiters.size && this.waiters.get(runId) === waiters) this.waiters.delete(runId);
      resolve(woke);
    };
    const wake = () => done(true);
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(false), ms);
    waiters.add(wake);
    signal?.addEventListener('abort', onAbort);
    return { promise, cancel: () => done(false) };
  }

  /**
   * The run's events after `lastEventId` (from the first without one), until its end mark; when
   * no event comes for a while and `active()` says the run is over, until then.
   */
  async *read(
    runId: string,
    lastEventId: string | undefined,
    active: () => Promise<boolean>,
    signal?: AbortSignal,
  ): AsyncGenerator<StreamEvent> {
    let cursor = lastEventId && /^\d+-\d+$/.test(lastEventId) ? lastEventId : '0-0';
    const key = this.key(runId);
    while (!signal?.aborted) {
      const wait = this.waitForEvents(runId, 1000, signal); // armed before the read: no wake-up is lost
      const entries = (await this.redis.xrange(key, `(${cursor}`, '+', 'COUNT', 1000)) as Array<[string, string[]]>;
      for (const [id, fields] of entries) {
        cursor = id;
        const f: Record<string, string> = {};
        for (let i = 0; i < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
        if (f.e === END) {
          wait.cancel();
          return;
        }
        yield { id, event: f.e!, data: JSON.parse(f.d!), ...(f.n != null ? { normalized: f.n === '1' } : {}) };
      }
      if (entries.length) {
        wait.cancel();
        continue;
      }
      if (await wait.promise) continue;
      // Quiet: a run that is over (its end mark expired, or it ended before streams existed) ends the read.
      if (!(await active())) {
        const rest = (await this.redis.xrange(key, `(${cursor}`, '+')) as Array<[string, string[]]>;
        if (!rest.length) return;
      }
    }
  }
}
