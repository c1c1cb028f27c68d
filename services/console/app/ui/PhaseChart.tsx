import type { RevisionHistory } from '../api/types';
import { formatDuration, PHASE_LABELS, PHASES, phaseDurations, type PhaseDurations } from '../phases';
import { short } from './common';

const WIDTH = 640;
const HEIGHT = 160;
const GAP = 2;

/**
 * Stacked bars, oldest revision on the left: time queued, building and deploying, so a build
 * that grows slower shows at a glance. The same numbers are in a table for screen readers.
 */
export function PhaseChart({ histories }: { histories: RevisionHistory[] }) {
  const rows = histories
    .slice()
    .reverse()
    .map((h) => ({ id: h.revision_id, status: h.status, durations: phaseDurations(h) }));
  if (!rows.length) return <p>No revision history yet.</p>;
  const total = (d: PhaseDurations) => PHASES.reduce((sum, p) => sum + (d[p] ?? 0), 0);
  const max = Math.max(1, ...rows.map((r) => total(r.durations)));
  const barWidth = Math.max(2, WIDTH / rows.length - GAP);
  const slowest = rows.reduce((a, b) => (total(b.durations) > total(a.durations) ? b : a));
  return (
    <figure className="chart">
      <svg
        viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
        role="img"
        aria-label={`Phase durations of ${rows.length} revisions, oldest first; the slowest took ${formatDuration(total(slowest.durations))}.`}
      >
        {rows.map((row, i) => {
          let y = HEIGHT;
          return (
            <g key={row.id}>
              <title>{`${short(row.id)} (${row.status}): ${PHASES.map((p) => `${PHASE_LABELS[p]} ${formatDuration(row.durations[p])}`).join(', ')}`}</title>
              {PHASES.map((phase) => {
                const h = ((row.durations[phase] ?? 0) / max) * (HEIGHT - 4);
                y -= h;
                return (
                  <rect
                    key={phase}
                    className={`phase-${phase}`}
                    x={i * (barWidth + GAP)}
                    y={y}
                    width={barWidth}
                    height={h}
                  />
                );
              })}
            </g>
          );
        })}
      </svg>
      <figcaption>
        <ul className="legend">
          {PHASES.map((p) => (
            <li key={p}>
              <span className={`swatch phase-${p}`} aria-hidden="true" /> {PHASE_LABELS[p]}
            </li>
          ))}
        </ul>
        <details>
          <summary>The numbers</summary>
          <table>
            <thead>
              <tr>
                <th scope="col">Revision</th>
                {PHASES.map((p) => (
                  <th scope="col" key={p}>
                    {PHASE_LABELS[p]}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <tr key={row.id}>
                  <th scope="row">
                    <code>{short(row.id)}</code>
                  </th>
                  {PHASES.map((p) => (
                    <td key={p}>{formatDuration(row.durations[p])}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      </figcaption>
    </figure>
  );
}
