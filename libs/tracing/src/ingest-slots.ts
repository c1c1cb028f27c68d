import { TooManyRequestsError } from '@slipway/domain';

/**
 * Ingest requests being written at once, per writer (a workspace at the api, a deployment at its
 * trace front), in one process. Past `limit`, a request is refused at once with 429 and
 * `Retry-After: 1` — which the langsmith client and OTLP exporters retry — instead of queueing
 * behind the others: one writer's flood never holds up another's, and nothing waits in memory.
 */
export class IngestSlots {
  private readonly busy = new Map<string, number>();

  constructor(readonly limit: number) {}

  /** Runs `write` in one of `key`'s slots; throws TooManyRequestsError when they are all taken. */
  async run<T>(key: string, write: () => Promise<T>): Promise<T> {
    const taken = this.busy.get(key) ?? 0;
    if (taken >= this.limit) {
      throw new TooManyRequestsError(
        `${taken} trace ingest requests of this writer are being written; send again shortly.`,
        1,
      );
    }
    this.busy.set(key, taken + 1);
    try {
      return await write();
    } finally {
      const left = (this.busy.get(key) ?? 1) - 1;
      if (left > 0) this.busy.set(key, left);
      else this.busy.delete(key);
    }
  }
}
