import { Gauge, type Registry } from 'prom-client';
import type { DataSource } from '@slipway/db';
import { deploymentRollups } from '@slipway/tracing';

/** The window the gauges cover. */
const WINDOW_MS = 3_600_000;
/** Scrapes within this of the last read reuse it: the read aggregates an hour of trace summaries. */
const REFRESH_MS = 30_000;

/**
 * Per deployment and revision, its traces of the last hour, read from the trace summaries (the
 * same figures as `traces_by_revision` in a deployment's metrics, docs/tracing.md):
 * `slipway_deployment_traces{deployment,revision,status}`,
 * `slipway_deployment_trace_latency_seconds{deployment,revision,quantile}` (0.5, 0.95) and
 * `slipway_deployment_trace_tokens{deployment,revision,kind}` (prompt, completion). Gauges over a
 * sliding window, so every api process reports the same values (aggregate with `max`). A revision
 * with no trace in the hour leaves the series; `revision` is empty for traces naming none.
 */
export class TraceRollupsCollector {
  private readonly traces: Gauge<'deployment' | 'revision' | 'status'>;
  private readonly latency: Gauge<'deployment' | 'revision' | 'quantile'>;
  private readonly tokens: Gauge<'deployment' | 'revision' | 'kind'>;
  private readAt = 0;

  constructor(
    registry: Registry,
    private readonly dataSource: DataSource,
    private readonly now: () => number = Date.now,
  ) {
    const labels = { registers: [registry] };
    this.traces = new Gauge({
      name: 'slipway_deployment_traces',
      help: "Traces of a deployment's tracing project that started in the last hour, by the revision they name and their root's status.",
      labelNames: ['deployment', 'revision', 'status'],
      ...labels,
    });
    this.latency = new Gauge({
      name: 'slipway_deployment_trace_latency_seconds',
      help: 'Root latency of the traces of the last hour that ended, by revision: median (0.5) and 95th percentile (0.95).',
      labelNames: ['deployment', 'revision', 'quantile'],
      ...labels,
    });
    this.tokens = new Gauge({
      name: 'slipway_deployment_trace_tokens',
      help: 'Tokens used by the traces of the last hour, by revision: prompt and completion.',
      labelNames: ['deployment', 'revision', 'kind'],
      ...labels,
    });
  }

  /** Reads the rollups again unless the last read is recent; a failed read leaves the gauges as they were. */
  async collect(): Promise<void> {
    if (this.now() - this.readAt < REFRESH_MS) return;
    const rows = await deploymentRollups(this.dataSource.manager, new Date(this.now() - WINDOW_MS));
    this.readAt = this.now();
    for (const gauge of [this.traces, this.latency, this.tokens]) gauge.reset();
    for (const r of rows) {
      const at = { deployment: r.deployment_id, revision: r.revision_id ?? '' };
      this.traces.set({ ...at, status: 'error' }, r.errors);
      this.traces.set({ ...at, status: 'ok' }, r.traces - r.errors);
      if (r.latency_p50_ms !== null) this.latency.set({ ...at, quantile: '0.5' }, r.latency_p50_ms / 1000);
      if (r.latency_p95_ms !== null) this.latency.set({ ...at, quantile: '0.95' }, r.latency_p95_ms / 1000);
      this.tokens.set({ ...at, kind: 'prompt' }, r.prompt_tokens);
      this.tokens.set({ ...at, kind: 'completion' }, r.completion_tokens);
    }
  }
}
