/** How the Traces tab writes its numbers. */

/** "0.50 s", "12.3 s"; a dash while a trace is pending. */
export function seconds(value: number | null): string {
  if (value === null) return '—';
  return value < 10 ? `${value.toFixed(2)} s` : `${value.toFixed(1)} s`;
}

export function milliseconds(value: number | null): string {
  return value === null ? '—' : seconds(value / 1_000);
}

export const tokens = (value: number | null | undefined) => (value ? value.toLocaleString('en') : '0');

/** Errors over traces as a percentage; a dash with no traces. */
export function errorRate(errors: number, traces: number): string {
  return traces ? `${Math.round((errors / traces) * 1_000) / 10} %` : '—';
}
