import { useEffect, useMemo, useState } from 'react';
import { ErrorText, useApi, useLoad } from '../common';
import { Chart, type ChartLine } from './Chart';
import { ServingLine } from './ServingLine';
import type { DeploymentMetrics, MetricWindow, Point } from './types';

/** The numbers are written in 10 s buckets; a re-read this often shows them soon after. */
const REFRESH_MS = 10_000;

const count = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(1));
const ms = (v: number) => `${v < 10 ? v.toFixed(1) : Math.round(v)} ms`;
const percent = (v: number) => `${v.toFixed(v < 10 ? 1 : 0)} %`;
function bytes(v: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (v >= 1024 && i < units.length - 1) (v /= 1024), i++;
  return `${v.toFixed(v < 10 && i ? 1 : 0)} ${units[i]}`;
}

/** The totals people look for first, each with its number in the DOM (`data-metric`). */
function Totals({ metrics, runs }: { metrics: DeploymentMetrics; runs: boolean }) {
  const t = metrics.totals;
  const items: Array<[string, string, string]> = [
    ['requests', 'Requests', count(t.requests ?? 0)],
    ['errors_4xx', '4xx', count(t.errors_4xx ?? 0)],
    ['errors_5xx', '5xx', count(t.errors_5xx ?? 0)],
    ['latency_p95_ms', 'p95 latency', t.latency_p95_ms == null ? '—' : ms(t.latency_p95_ms)],
    ['restarts', 'Restarts', count(t.restarts ?? 0)],
    ['oom_kills', 'OOM kills', count(t.oom_kills ?? 0)],
  ];
  if (runs) {
    items.push(
      ['runs_started', 'Runs', count(t.runs_started ?? 0)],
      ['runs_failed', 'Failed runs', count(t.runs_failed ?? 0)],
      ['run_duration_p50_ms', 'Median run', t.run_duration_p50_ms == null ? '—' : ms(t.run_duration_p50_ms)],
    );
  }
  return (
    <dl className="metric-totals" aria-label={`Totals over ${metrics.window}`}>
      {items.map(([key, label, value]) => (
        <div key={key}>
          <dt>{label}</dt>
          <dd data-metric={key}>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

/**
 * A deployment's runtime numbers (docs/api.md, Metrics): whether it serves, totals, and uPlot
 * charts of requests, latency, CPU, memory and restarts over 1 h or 24 h, re-read every few
 * seconds; with `runs` (the platform serves its graphs), its agent runs and their median duration too.
 */
export function MetricsPanel({ deploymentId, runs = false }: { deploymentId: string; runs?: boolean }) {
  const api = useApi();
  const [range, setRange] = useState<MetricWindow>('1h');
  const metrics = useLoad(
    (signal) => api.get<DeploymentMetrics>(`/v2/deployments/${deploymentId}/metrics`, { window: range }, signal),
    [api, deploymentId, range],
  );
  const { reload } = metrics;
  useEffect(() => {
    const timer = setInterval(() => !document.hidden && reload(), REFRESH_MS);
    return () => clearInterval(timer);
  }, [reload]);

  const charts = useMemo((): Array<Parameters<typeof Chart>[0]> => {
    const m = metrics.data;
    if (!m) return [];
    const line = (label: string, points: Point[], color: string): ChartLine => ({ label, points, color });
    return [
      {
        title: 'Requests',
        unit: count,
        total: true,
        lines: [
          line('requests', m.series.requests, 'var(--chart-1)'),
          line('4xx', m.series.errors_4xx, 'var(--chart-2)'),
          line('5xx', m.series.errors_5xx, 'var(--chart-3)'),
        ],
      },
      {
        title: 'Latency',
        unit: ms,
        lines: [
          line('p50', m.series.latency_p50_ms, 'var(--chart-4)'),
          line('p95', m.series.latency_p95_ms, 'var(--chart-2)'),
          line('p99', m.series.latency_p99_ms, 'var(--chart-3)'),
        ],
      },
      { title: 'CPU', unit: percent, lines: [line('CPU', m.series.cpu_percent, 'var(--chart-5)')] },
      { title: 'Memory', unit: bytes, lines: [line('memory', m.series.memory_bytes, 'var(--chart-6)')] },
      {
        title: 'Restarts',
        unit: count,
        lines: [
          line('restarts', m.series.restarts, 'var(--chart-2)'),
          line('OOM kills', m.series.oom_kills, 'var(--chart-3)'),
        ],
      },
      ...(runs
        ? [
            {
              title: 'Runs',
              unit: count,
              lines: [
                line('started', m.series.runs_started, 'var(--chart-1)'),
                line('succeeded', m.series.runs_succeeded, 'var(--chart-4)'),
                line('failed', m.series.runs_failed, 'var(--chart-3)'),
              ],
            },
            {
              title: 'Run duration',
              unit: ms,
              lines: [line('p50 (approx.)', m.series.run_duration_p50_ms, 'var(--chart-5)')],
            },
          ]
        : []),
    ];
  }, [metrics.data, runs]);

  return (
    <section aria-labelledby="metrics-title" className="metrics">
      <h2 id="metrics-title">Health and metrics</h2>
      {metrics.data && <ServingLine metrics={metrics.data} />}
      <fieldset className="window">
        <legend>Window</legend>
        {(['1h', '24h'] as const).map((w) => (
          <label key={w}>
            <input type="radio" name="metrics-window" value={w} checked={range === w} onChange={() => setRange(w)} />{' '}
            {w === '1h' ? 'Last hour' : 'Last 24 hours'}
          </label>
        ))}
      </fieldset>
      <ErrorText error={metrics.error} />
      {metrics.data && <Totals metrics={metrics.data} runs={runs} />}
      <div className="metric-charts">
        {charts.map((c) => (
          <Chart key={c.title} {...c} />
        ))}
      </div>
    </section>
  );
}
