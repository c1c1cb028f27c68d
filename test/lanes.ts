/**
 * The test files that spend most of their time waiting on clocks rather than computing: cron
 * ticks, TTL sweeps, run leases lapsing, metric buckets closing, a listener left silent, phase
 * deadlines passing, connections to blocked addresses timing out, log and metric batches
 * flushing (each measured alone at a quarter of a core or less). `npm test`
 * runs them in a lane of their own, one at a time, beside the rest of the suite on its two
 * workers (infra/scripts/test.mjs): with two workers only, two of these side by side left both
 * cores mostly idle for minutes (a fresh-clone CI run sampled 15–40 % busy through that stretch).
 * `SLIPWAY_TEST_LANE` (set by test.mjs) picks a lane; without it, vitest runs every file as one.
 */
export const WAITING_FILES = [
  'test/e2e/agent-server-crons.test.ts',
  'test/e2e/agent-server-instances.test.ts',
  'test/e2e/agent-server-queue-workers.test.ts',
  'test/e2e/agent-server-metrics.test.ts',
  'test/integration/agent-server-storage.test.ts',
  'test/e2e/listener-agent.test.ts',
  'test/e2e/failures.test.ts',
  'test/e2e/sandbox-network.test.ts',
  'test/e2e/deployment-observability.test.ts',
];

export type Lane = 'main' | 'waiting';

/** The lane this vitest run is (SLIPWAY_TEST_LANE), or null for the whole suite. */
export function laneOf(value: string | undefined): Lane | null {
  if (value === undefined || value === '') return null;
  if (value === 'main' || value === 'waiting') return value;
  throw new Error(`SLIPWAY_TEST_LANE must be "main" or "waiting", not ${JSON.stringify(value)}`);
}
