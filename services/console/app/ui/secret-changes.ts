/**
 * Which secret values a rollback changes (the rollback dialog's rows). No imports, structural
 * types only: the unit tests (test/console) load this file as it is.
 */

/** What of a revision (api/types Revision) the comparison reads. */
export interface RevisionSecrets {
  secrets: Array<{ name: string }>;
  secret_fingerprints?: Array<{ name: string; fingerprint: string | null }> | null;
}

/** A change of the rollback dialog's table: the field, its value now and after. */
export interface SecretChange {
  field: string;
  now: string;
  after: string;
}

/** A revision's fingerprints by name, or null when it has none (made before they were kept). */
const fingerprintsOf = (r: RevisionSecrets): Map<string, string> | null =>
  r.secret_fingerprints
    ? new Map(r.secret_fingerprints.flatMap((s) => (s.fingerprint ? [[s.name, s.fingerprint] as const] : [])))
    : null;

/**
 * The secrets both revisions have whose values differ (docs/api.md, Revisions: the fingerprints
 * are compared, never values), and those whose change cannot be told because a revision was made
 * before fingerprints were kept: those are "unknown", not "unchanged".
 */
export function secretValueChanges(active: RevisionSecrets | null, target: RevisionSecrets): SecretChange[] {
  if (!active) return [];
  const kept = new Set(active.secrets.map((s) => s.name));
  const shared = target.secrets.map((s) => s.name).filter((n) => kept.has(n));
  const now = fingerprintsOf(active);
  const then = fingerprintsOf(target);
  const changed: string[] = [];
  const unknown: string[] = [];
  for (const name of shared) {
    const a = now?.get(name);
    const b = then?.get(name);
    if (!a || !b) unknown.push(name);
    else if (a !== b) changed.push(name);
  }
  const rows: SecretChange[] = [];
  if (changed.length)
    rows.push({
      field: 'Secrets changed',
      now: changed.sort().join(', '),
      after: changed.length > 1 ? 'other values' : 'another value',
    });
  if (unknown.length)
    rows.push({
      field: 'Secret values unknown',
      now: unknown.sort().join(', '),
      after: 'unknown: a revision was made before values were compared',
    });
  return rows;
}
