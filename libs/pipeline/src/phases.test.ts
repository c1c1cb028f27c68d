import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '@slipway/config';
import { isRevisionTerminal, REVISION_ACTIVE_PHASES, REVISION_TRANSITIONS, type RevisionStatus } from '@slipway/domain';
import { HAND_OFF_JOBS, JOB_CATALOG } from '@slipway/jobs';
import { deadlineFailure, PHASES, phaseOf, phaseOfJob, WORKED_PHASES, type Phase, type PhaseName } from './phases.js';

/** The phase declaration (docs/architecture.md, Who moves a revision) against the status table and the job catalog. */
describe('phase declaration', () => {
  const byName = new Map(PHASES.map((p) => [p.name, p]));
  const can = (from: RevisionStatus, to: RevisionStatus) => REVISION_TRANSITIONS[from].includes(to);

  it('reaches every phase from the first by following next', () => {
    const seen = new Set<PhaseName>();
    for (let phase: Phase | undefined = PHASES[0]; phase; phase = phase.next ? byName.get(phase.next) : undefined) {
      expect(seen.has(phase.name)).toBe(false);
      seen.add(phase.name);
    }
    expect([...seen]).toEqual(PHASES.map((p) => p.name));
  });

  it('enters every worked phase through a transition the status table allows, from where the previous phase leaves', () => {
    for (const phase of PHASES) {
      expect(phase.statuses).toContain(phase.entry);
      for (const from of phase.from) expect(can(from, phase.entry), `${from} → ${phase.entry}`).toBe(true);
      const next = phase.next ? byName.get(phase.next) : undefined;
      if (next) expect(next.statuses).toContain(phase.onSuccess);
      else expect(isRevisionTerminal(phase.onSuccess)).toBe(true);
    }
  });

  it('fails every status of every phase into a terminal status, with a status_message', () => {
    const budgets = { enqueueDeadlineMs: 90_000, buildDeadlineMs: 30 * 60_000, rolloutDeadlineMs: 45_000 };
    for (const phase of PHASES) {
      expect(isRevisionTerminal(phase.onFailure)).toBe(true);
      for (const status of phase.statuses) {
        expect(can(status, phase.onFailure), `${status} → ${phase.onFailure}`).toBe(true);
        const failure = deadlineFailure(status, budgets);
        expect(failure.to).toBe(phase.onFailure);
        expect(failure.message.trim().length).toBeGreaterThan(20);
      }
    }
    expect(deadlineFailure('BUILDING', budgets).message).toBe(
      'The build did not finish within its deadline of 30 min.',
    );
    expect(deadlineFailure('UNKNOWN', budgets).message).toBe(
      'The rollout did not become healthy within its deadline of 45 s.',
    );
    expect(deadlineFailure('QUEUED', budgets).message).toContain('within 2 min');
  });

  it('says why a worked phase was retried when its worker died', () => {
    for (const phase of WORKED_PHASES) expect(phase.lostMessage?.trim()).toBeTruthy();
  });

  it('gives every phase a positive budget under the default configuration', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'slipway-phases-'));
    try {
      const { pipeline } = loadConfig({
        SLIPWAY_SECRETS_KEY: randomBytes(32).toString('base64'),
        SLIPWAY_DATA_DIR: dir,
      });
      for (const phase of PHASES) expect(pipeline[phase.budget], phase.name).toBeGreaterThan(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('puts every open status in exactly one phase', () => {
    for (const status of REVISION_ACTIVE_PHASES)
      expect(
        PHASES.filter((p) => p.statuses.includes(status)),
        status,
      ).toHaveLength(1);
    for (const phase of PHASES) for (const status of phase.statuses) expect(isRevisionTerminal(status)).toBe(false);
  });

  it('agrees with the job catalog: each hand-off job works one phase, entered as its hand-off says', () => {
    expect(WORKED_PHASES.map((p) => p.job).sort()).toEqual([...HAND_OFF_JOBS].sort());
    for (const job of HAND_OFF_JOBS) {
      const phase = phaseOfJob(job)!;
      expect(phase.entry).toBe(JOB_CATALOG[job].handOff!.to);
      expect(phase.from).toEqual(JOB_CATALOG[job].handOff!.from);
      expect(phaseOf(phase.entry)).toBe(phase);
    }
  });
});
