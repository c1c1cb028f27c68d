import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '@slipway/config';
import { isRevisionTerminal, REVISION_ACTIVE_PHASES, REVISION_TRANSITIONS, type RevisionStatus } from '@slipway/domain';
import { execFileSync } from 'node:child_process';
import { JOB_CATALOG } from '@slipway/jobs';
import {
  deadlineFailure,
  nextJob,
  PHASES,
  phaseOf,
  phaseOfJob,
  WORKED_PHASES,
  type Phase,
  type PhaseName,
} from './phases.js';

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

  it('enters each worked phase through its own job, a revision job of the catalog, by an allowed hand-off', () => {
    for (const phase of WORKED_PHASES) {
      expect(phaseOfJob(phase.job!)).toBe(phase);
      const jobId = JOB_CATALOG[phase.job!].jobId as (payload: { revisionId: string; attempt: number }) => string;
      expect(jobId({ revisionId: 'r', attempt: 0 })).toMatch(/-r-a0$/);
      expect(phaseOf(phase.entry)).toBe(phase);
      expect(phase.from.length).toBeGreaterThan(0);
      // A worker begins at the first working status and ends the phase from any of them.
      expect(can(phase.entry, phase.working[0]!)).toBe(true);
      for (const status of phase.working) {
        expect(phase.statuses).toContain(status);
        expect(can(status, phase.onSuccess), `${status} → ${phase.onSuccess}`).toBe(true);
      }
    }
  });

  it('chooses every next job from the table: the first needed phase while waiting, the current phase after', () => {
    const code = { source: 'github', artifactRef: null };
    const image = { source: 'internal_docker', artifactRef: null };
    const redeploy = { source: 'github', artifactRef: '/artifacts/r1' };
    expect(nextJob({ status: 'CREATING', ...code })).toBe('build.revision');
    expect(nextJob({ status: 'QUEUED', ...code })).toBe('build.revision');
    expect(nextJob({ status: 'CREATING', ...image })).toBe('rollout.revision');
    expect(nextJob({ status: 'QUEUED', ...redeploy })).toBe('rollout.revision');
    // After the build phase's success, the revision is in the rollout phase: its job follows.
    expect(nextJob({ status: 'AWAITING_DEPLOY', ...redeploy })).toBe('rollout.revision');
    expect(nextJob({ status: 'BUILDING', ...code })).toBe('build.revision');
    for (const status of ['DEPLOYED', 'BUILD_FAILED', 'INTERRUPTED', 'SKIPPED'] as const)
      expect(nextJob({ status, ...code })).toBeNull();
  });

  it('is the only place revision jobs are chosen and phases ended: workers call begin/complete/fail', () => {
    const root = path.resolve(__dirname, '../../..');
    const grep = (pattern: string) => {
      try {
        return execFileSync(
          'git',
          ['grep', '-n', '-E', pattern, '--', 'services', 'libs', ':!*.test.ts', ':!libs/pipeline'],
          {
            cwd: root,
            encoding: 'utf8',
          },
        )
          .trim()
          .split('\n')
          .filter(Boolean);
      } catch {
        return [];
      }
    };
    // No revision job recorded outside libs/pipeline (the relay hands over what the flow recorded).
    expect(grep(`enqueueInOutbox\\([^)]*'(build|rollout)\\.revision'`)).toEqual([]);
    expect(grep(`outboxJob\\(\\s*'(build|rollout)\\.revision'`)).toEqual([]);
    // No phase's working or terminal status written by name through transition() outside libs/pipeline.
    const ended = PHASES.flatMap((p) => [p.onSuccess, p.onFailure, ...p.working]);
    expect(grep(`\\.transition\\([^)]*'(${ended.join('|')})'`)).toEqual([]);
    // The workers end their phases through the flow.
    expect(grep(`flow\\.(begin|complete|fail)\\(`).length).toBeGreaterThanOrEqual(6);
  });
});
