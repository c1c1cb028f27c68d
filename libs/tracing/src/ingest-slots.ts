import { TooManyRequestsError } from '@slipway/domain';

/**
 * Ingest requests being written at once, per writer (a workspace at the api, a deployment at its
 * trace front), in one process. Past `limit`, a request is refused at once with 429 and
 * `Retry-After: 1` — which the langsmith client and OTLP exporters retry — instead of queueing
 * behind the others: one writer's flood never holds up another's, and nothing waits in memory.
 */
export class IngestSlots {
  private readonly busy = new Map<string, number>();
  private inFlight = 0;

  constructor(
    readonly limit: number,
    /**
     * Requests of all writers at once: each holds its body (up to the ingest limits) and its parse,
     * so many writers together are bounded too, not only each alone.
     */
    readonly total = Number.POSITIVE_INFINITY,
  ) {}

  /** Runs `write` in one of `key`'s slots; throws TooManyRequestsError when they are all taken. */
  async run<T>(key: string, write: () => Promise<T>): Promise<T> {
    const taken = this.busy.get(key) ?? 0;
    if (taken >= this.limit) {
      throw new TooManyRequestsError(
        `${taken} trace ingest requests of this writer are being written; send again shortly.`,
        1,
      );
    }
    if (this.inFlight >= this.total)
      throw new TooManyRequestsError(
        'This server is writing as many trace ingest requests as it takes; send again shortly.',
        1,
      );
    this.busy.set(key, taken + 1);
    this.inFlight++;
    try {
      return await write();
    } finally {
      this.inFlight--;
      const left = (this.busy.get(key) ?? 1) - 1;
      if (left > 0) this.busy.set(key, left);
      else this.busy.delete(key);
    }
  }
}
