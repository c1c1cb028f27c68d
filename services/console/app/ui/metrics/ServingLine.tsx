import type { DeploymentMetrics } from './types';

function ago(iso: string | null): string {
  if (!iso) return 'no health check yet';
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return `last health check ${s < 60 ? `${s} s` : `${Math.round(s / 60)} min`} ago`;
}

/** At a glance: does it serve? Healthy instances against the active revision's min_scale. */
export function ServingLine({ metrics }: { metrics: DeploymentMetrics }) {
  const running = metrics.instances.filter((i) => i.status === 'running');
  const up = running.filter((i) => i.healthy !== false).length;
  const expected = metrics.instances_expected;
  const last =
    metrics.instances
      .map((i) => i.last_health_check_at)
      .filter((t): t is string => !!t)
      .sort()
      .at(-1) ?? null;
  const serving = expected !== null && up > 0;
  const state = !serving ? 'down' : up < expected! ? 'degraded' : 'up';
  const text =
    expected === null
      ? 'Not serving: no revision is active.'
      : `${state === 'down' ? 'Not serving' : state === 'degraded' ? 'Serving, degraded' : 'Serving'}: ${up} of ${expected} instance${expected === 1 ? '' : 's'} up, ${ago(last)}.`;
  return (
    <p
      className={`serving serving-${state}`}
      role="status"
      aria-label="Serving status"
      data-instances-up={up}
      data-instances-expected={expected ?? ''}
    >
      {text}
    </p>
  );
}
