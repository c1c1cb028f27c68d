import { describe, expect, it } from 'vitest';
import {
  DEPLOYMENT_STATUSES,
  DEPLOYMENT_TRANSITIONS,
  REVISION_STATUSES,
  REVISION_TERMINAL,
  REVISION_TRANSITIONS,
  reachable,
  revisionSourcesOf,
} from './status.js';

describe('revision status machine', () => {
  it('reaches every status from CREATING', () => {
    expect([...reachable(REVISION_TRANSITIONS, 'CREATING')].sort()).toEqual([...REVISION_STATUSES].sort());
  });

  it('never leaves a terminal status', () => {
    for (const status of REVISION_TERMINAL) expect(REVISION_TRANSITIONS[status], status).toEqual([]);
  });

  it('lets every non-terminal status end (reach a terminal status)', () => {
    for (const status of REVISION_STATUSES) {
      const ends = [...reachable(REVISION_TRANSITIONS, status)].filter((s) => REVISION_TERMINAL.has(s));
      expect(ends.length, status).toBeGreaterThan(0);
    }
  });

  it('allows interruption from every non-terminal status', () => {
    expect(revisionSourcesOf('INTERRUPTED').sort()).toEqual(
      REVISION_STATUSES.filter((s) => !REVISION_TERMINAL.has(s)).sort(),
    );
  });

  it('follows the contract order for a build', () => {
    const path = ['CREATING', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED'] as const;
    for (let i = 1; i < path.length; i++) expect(REVISION_TRANSITIONS[path[i - 1]!]).toContain(path[i]);
  });
});

describe('deployment status machine', () => {
  it('reaches every status from AWAITING_DATABASE', () => {
    expect([...reachable(DEPLOYMENT_TRANSITIONS, 'AWAITING_DATABASE')].sort()).toEqual([...DEPLOYMENT_STATUSES].sort());
  });

  it('can be deleted from every status but AWAITING_DELETE', () => {
    for (const status of DEPLOYMENT_STATUSES.filter((s) => s !== 'AWAITING_DELETE')) {
      expect(DEPLOYMENT_TRANSITIONS[status], status).toContain('AWAITING_DELETE');
    }
  });
});
