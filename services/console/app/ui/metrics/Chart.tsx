import { useEffect, useRef, useState } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Point } from './types';

export interface ChartLine {
  label: string;
  points: Point[];
  color: string;
}

/**
 * One uPlot time chart of a few lines sharing their steps (gaps bridged and every point marked:
 * a figure measured in one step only still shows). Redrawn when the data changes;
 * resized with its container (so it fits a phone's width). With `total` (its first line counts
 * events per step), the figure says in `data-total` the sum of that line as uPlot holds it: what
 * the chart drew, for anyone (a test) to check against what happened.
 */
export function Chart({
  title,
  lines,
  unit,
  total = false,
}: {
  title: string;
  lines: ChartLine[];
  unit: (v: number) => string;
  total?: boolean;
}) {
  const box = useRef<HTMLDivElement>(null);
  const [drawnTotal, setDrawnTotal] = useState<number | null>(null);
  useEffect(() => {
    const el = box.current;
    if (!el || !lines.length) return;
    const xs = lines[0]!.points.map(([t]) => t);
    const data: uPlot.AlignedData = [xs, ...lines.map((l) => l.points.map(([, v]) => v))];
    const width = () => Math.max(240, el.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: 160,
        series: [
          {},
          ...lines.map((l) => ({
            label: l.label,
            stroke: l.color,
            width: 1.5,
            spanGaps: true,
            points: { show: true, size: 4 },
            value: (_u: uPlot, v: number | null) => (v == null ? '—' : unit(v)),
          })),
        ],
        axes: [
          { stroke: 'currentColor' },
          { stroke: 'currentColor', size: 60, values: (_u, ticks) => ticks.map((v) => unit(v)) },
        ],
        legend: { show: true },
      },
      data,
      el,
    );
    setDrawnTotal(total ? Array.from(plot.data[1] ?? [], (v) => v ?? 0).reduce((sum, v) => sum + v, 0) : null);
    const resize = new ResizeObserver(() => plot.setSize({ width: width(), height: 160 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [lines, unit, total]);
  return (
    <figure className="metric-chart" data-total={drawnTotal ?? undefined}>
      <figcaption>{title}</figcaption>
      <div ref={box} role="img" aria-label={`${title} chart`} />
    </figure>
  );
}
