import { useEffect, useRef, useState } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { useTheme } from '../theme';
import type { Point } from './types';

export interface ChartLine {
  label: string;
  points: Point[];
  /** A colour, or a token of the theme (`var(--chart-1)`), read when the chart draws. */
  color: string;
}

/** The colour `value` stands for now: a canvas cannot resolve `var(…)` itself. */
function themeColor(value: string): string {
  const token = /^var\((--[\w-]+)\)$/.exec(value)?.[1];
  return token ? getComputedStyle(document.documentElement).getPropertyValue(token).trim() : value;
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
  // The canvas keeps the colours it was drawn in: a theme change draws it again.
  const theme = useTheme();
  useEffect(() => {
    const el = box.current;
    if (!el || !lines.length) return;
    const xs = lines[0]!.points.map(([t]) => t);
    const data: uPlot.AlignedData = [xs, ...lines.map((l) => l.points.map(([, v]) => v))];
    const width = () => Math.max(240, el.clientWidth);
    const axis = themeColor('var(--chart-axis)');
    const grid = { stroke: themeColor('var(--chart-grid)'), width: 1 };
    const ticks = { stroke: grid.stroke, width: 1 };
    const plot = new uPlot(
      {
        width: width(),
        height: 160,
        series: [
          {},
          ...lines.map((l) => ({
            label: l.label,
            stroke: themeColor(l.color),
            width: 1.5,
            spanGaps: true,
            points: { show: true, size: 4 },
            value: (_u: uPlot, v: number | null) => (v == null ? '—' : unit(v)),
          })),
        ],
        axes: [
          { stroke: axis, grid, ticks },
          { stroke: axis, grid, ticks, size: 60, values: (_u, values) => values.map((v) => unit(v)) },
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
  }, [lines, unit, total, theme]);
  return (
    <figure className="metric-chart" data-total={drawnTotal ?? undefined}>
      <figcaption>{title}</figcaption>
      <div ref={box} role="img" aria-label={`${title} chart`} />
    </figure>
  );
}
