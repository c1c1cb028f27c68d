import type { Action } from './ApiCall';
import { Field } from './ApiCall';

/** The resource_spec fields the console edits; the rest of a spec is kept as it is. */
const FIELDS = [
  ['cpu', 'CPU (cores)', '0.1'],
  ['cpu_limit', 'CPU limit (cores)', '0.1'],
  ['memory_mb', 'Memory (MB)', '1'],
  ['memory_limit_mb', 'Memory limit (MB)', '1'],
  ['min_scale', 'Minimum instances', '1'],
  ['max_scale', 'Maximum instances', '1'],
] as const;

export type ResourceDraft = Partial<Record<(typeof FIELDS)[number][0], string>>;

export const resourceDraftOf = (spec: unknown): ResourceDraft =>
  Object.fromEntries(
    FIELDS.map(([k]) => [
      k,
      (spec as Record<string, unknown> | null)?.[k] == null ? '' : String((spec as Record<string, unknown>)[k]),
    ]),
  );

/**
 * The spec to send: `base` (the whole current spec, since a PATCH replaces it) with the fields
 * given here; null when nothing is given and there is no base (the server's defaults then).
 */
export function resourceSpecOf(
  draft: ResourceDraft,
  base: Record<string, unknown> | null,
): Record<string, unknown> | null {
  const given = FIELDS.filter(([k]) => draft[k]?.trim());
  if (!given.length && !base) return null;
  const spec: Record<string, unknown> = { ...(base ?? {}) };
  for (const [k] of FIELDS) {
    if (draft[k]?.trim()) spec[k] = Number(draft[k]);
    else delete spec[k];
  }
  return spec;
}

/** Problems the form sees before the API does (the API checks the server's ceilings). */
export function resourceProblems(draft: ResourceDraft): Array<{ field: string; message: string }> {
  const n = (k: keyof ResourceDraft) => (draft[k]?.trim() ? Number(draft[k]) : null);
  const problems: Array<{ field: string; message: string }> = [];
  for (const [k] of FIELDS) {
    const v = n(k);
    if (v !== null && (!Number.isFinite(v) || v < 0))
      problems.push({ field: `source_config.resource_spec.${k}`, message: 'A non-negative number.' });
  }
  const pairs: Array<[keyof ResourceDraft, keyof ResourceDraft, string]> = [
    ['min_scale', 'max_scale', 'The minimum is at most the maximum.'],
    ['cpu', 'cpu_limit', 'The request is at most the limit.'],
    ['memory_mb', 'memory_limit_mb', 'The request is at most the limit.'],
  ];
  for (const [low, high, message] of pairs) {
    const a = n(low);
    const b = n(high);
    if (a !== null && b !== null && a > b) problems.push({ field: `source_config.resource_spec.${low}`, message });
  }
  return problems;
}

export function ResourcesFields({
  draft,
  onChange,
  action,
}: {
  draft: ResourceDraft;
  onChange: (d: ResourceDraft) => void;
  action: Action;
}) {
  return (
    <fieldset className="resources">
      <legend>Resources (empty: the server's default)</legend>
      {FIELDS.map(([k, label, step]) => (
        <Field
          key={k}
          label={label}
          name={`source_config.resource_spec.${k}`}
          action={action}
          render={(ids) => (
            <input
              {...ids}
              type="number"
              min="0"
              step={step}
              inputMode="decimal"
              value={draft[k] ?? ''}
              onChange={(e) => onChange({ ...draft, [k]: e.target.value })}
            />
          )}
        />
      ))}
    </fieldset>
  );
}
