import { collectDefaultMetrics, type Registry } from 'prom-client';

/**
 * The Node process defaults (CPU, memory, handles, event-loop lag), prefixed `slipway_`, for every
 * service. prom-client samples event-loop lag with a libuv timer at 10 ms by default: 100 wake-ups
 * a second, about 1 % of a core for an otherwise idle process (measured by `pnpm bench`, idle
 * stack). At 100 ms a lag worth alerting on still shows.
 */
export function collectProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry, prefix: 'slipway_', eventLoopMonitoringPrecision: 100 });
}
