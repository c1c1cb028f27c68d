import { describe, expect, it } from 'vitest';
import { secretValueChanges, type RevisionSecrets } from '../../services/console/app/ui/secret-changes.js';

/** Which secret values a rollback changes, as the rollback dialog says it: from fingerprints, never values. */

describe('secretValueChanges', () => {
  const revision = (fingerprints: Record<string, string> | null, names = Object.keys(fingerprints ?? { A: '' })) =>
    ({
      secrets: names.map((name) => ({ name })),
      secret_fingerprints: fingerprints && names.map((name) => ({ name, fingerprint: fingerprints[name] ?? null })),
    }) as RevisionSecrets;

  it('names the shared secrets whose fingerprints differ, never those kept or only in one revision', () => {
    const now = revision({ A: 'f1', B: 'f2', ONLY_NOW: 'f3' });
    const then = revision({ A: 'f1', B: 'other', ONLY_THEN: 'f4' });
    expect(secretValueChanges(now, then)).toEqual([{ field: 'Secrets changed', now: 'B', after: 'another value' }]);
    expect(secretValueChanges(now, revision({ A: 'f1', B: 'f2' }))).toEqual([]);
    expect(secretValueChanges(null, then)).toEqual([]);
  });

  it('says unknown, not unchanged, when a revision has no fingerprints', () => {
    const rows = secretValueChanges(revision({ B: 'f2', A: 'f1' }), revision(null, ['A', 'B']));
    expect(rows).toEqual([{ field: 'Secret values unknown', now: 'A, B', after: expect.stringContaining('unknown') }]);
    expect(secretValueChanges(revision(null, ['A']), revision({ A: 'f1' }))[0]?.field).toBe('Secret values unknown');
  });
});
