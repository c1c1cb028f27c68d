import { describe, expect, it } from 'vitest';
import { isRevisionTerminal, REVISION_TRANSITIONS } from '@slipway/domain';
import { HAND_OFF_JOBS, JOB_CATALOG, JOB_QUEUES, jobsOf, QUEUES, type JobName } from './catalog.js';

describe('the job catalog', () => {
  it('hands off exactly the revision phases: a build to AWAITING_BUILD, a rollout to AWAITING_DEPLOY, from a waiting revision', () => {
    const table = Object.fromEntries(HAND_OFF_JOBS.map((n) => [n, JOB_CATALOG[n].handOff]));
    expect(table).toEqual({
      'build.revision': { to: 'AWAITING_BUILD', from: ['CREATING', 'QUEUED'] },
      'rollout.revision': { to: 'AWAITING_DEPLOY', from: ['CREATING', 'QUEUED'] },
    });
  });

  it('declares only hand-offs the status table allows, never into a terminal status', () => {
    for (const name of HAND_OFF_JOBS) {
      const { to, from } = JOB_CATALOG[name].handOff!;
      expect(isRevisionTerminal(to), name).toBe(false);
      for (const status of from) expect(REVISION_TRANSITIONS[status], `${name}: ${status} → ${to}`).toContain(to);
    }
  });

  it('puts every job on its declared queue, and every queue carries some job', () => {
    for (const name of Object.keys(JOB_CATALOG) as JobName[]) expect(JOB_CATALOG[name].queue).toBe(JOB_QUEUES[name]);
    for (const queue of Object.values(QUEUES)) expect(jobsOf(queue).length, queue).toBeGreaterThan(0);
  });
});
