/** One line of the bench's table: a measurement, its same-run baseline, and the target. */
export interface BenchRow {
  scenario: string;
  metric: string;
  value: number;
  unit: string;
  baseline?: number;
  /** value ÷ baseline, or baseline ÷ value for "lower is better" metrics, as the target reads. */
  ratio?: number;
  /** Human-readable target, e.g. "≥ 0.25 × raw req/s". */
  target?: string;
  met?: boolean;
}

const fmt = (n: number | undefined, digits = 1) => (n === undefined || Number.isNaN(n) ? '—' : n.toFixed(digits));

/** Prints rows as an aligned table. */
export function printTable(rows: BenchRow[]): void {
  const lines = [['scenario', 'metric', 'value', 'baseline', 'ratio', 'target', 'met']];
  for (const r of rows) {
    lines.push([
      r.scenario,
      r.metric,
      `${fmt(r.value)} ${r.unit}`,
      r.baseline === undefined ? '—' : `${fmt(r.baseline)} ${r.unit}`,
      fmt(r.ratio, 2),
      r.target ?? '—',
      r.met === undefined ? '—' : r.met ? 'yes' : 'NO',
    ]);
  }
  const widths = lines[0]!.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
  for (const [i, l] of lines.entries()) {
    console.log(l.map((c, j) => c.padEnd(widths[j]!)).join('  '));
    if (i === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  }
}

/** A throughput row: higher is better, `min` is the least acceptable ratio. */
export function atLeast(
  scenario: string,
  metric: string,
  value: number,
  baseline: number,
  min: number,
  unit = 'req/s',
): BenchRow {
  const ratio = value / baseline;
  return { scenario, metric, value, unit, baseline, ratio, target: `≥ ${min} × baseline`, met: ratio >= min };
}

/** A latency row: lower is better, `max` is the largest acceptable multiple of the baseline. */
export function atMost(
  scenario: string,
  metric: string,
  value: number,
  baseline: number,
  max: number,
  unit = 'ms',
): BenchRow {
  const ratio = value / baseline;
  return { scenario, metric, value, unit, baseline, ratio, target: `≤ ${max} × baseline`, met: ratio <= max };
}

/** An absolute bound (no baseline): `value ≤ max`. */
export function bounded(scenario: string, metric: string, value: number, max: number, unit: string): BenchRow {
  return { scenario, metric, value, unit, target: `≤ ${max} ${unit}`, met: value <= max };
}
