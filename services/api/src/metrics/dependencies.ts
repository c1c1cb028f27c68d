import { Gauge, type Registry } from 'prom-client';
import type { Redis } from 'ioredis';
import { ping, type DataSource } from '@slipway/db';

/** How long one probe of a dependency may take before it counts as unreachable. */
const CHECK_TIMEOUT_MS = 2_000;

export type DependencyState = 'ok' | 'unreachable';

export interface DependencyReport {
  postgres: DependencyState;
  redis: DependencyState;
}

function withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} did not answer within ${CHECK_TIMEOUT_MS} ms`)),
      CHECK_TIMEOUT_MS,
    );
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Probes what the api depends on. Postgres is the truth: without it no write can be accepted.
 * Redis is not needed to accept writes (the outbox holds jobs until it is back), so its loss
 * degrades the service (no enqueue, no Bull Board, no rate-limit sharing) without making it
 * unready. The result feeds `/readyz` and the `slipway_dependency_up` gauge of `/metrics`.
 */
export class DependencyChecks {
  private readonly up: Gauge<'dependency'>;

  constructor(
    private readonly dataSource: DataSource,
    private readonly redis: Redis,
    registry: Registry,
  ) {
    this.up = new Gauge({
      name: 'slipway_dependency_up',
      help: 'Whether the api reached a dependency at the last probe (1) or not (0).',
      labelNames: ['dependency'],
      registers: [registry],
      collect: async () => void (await this.check()),
    });
  }

  async check(): Promise<DependencyReport> {
    const [pg, rd] = await Promise.allSettled([
      withTimeout(ping(this.dataSource), 'Postgres'),
      withTimeout(this.redis.ping(), 'Redis'),
    ]);
    const report: DependencyReport = {
      postgres: pg.status === 'fulfilled' ? 'ok' : 'unreachable',
      redis: rd.status === 'fulfilled' ? 'ok' : 'unreachable',
    };
    for (const [dependency, state] of Object.entries(report)) this.up.set({ dependency }, state === 'ok' ? 1 : 0);
    return report;
  }
}
