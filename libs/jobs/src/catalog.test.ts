import { describe, expect, it } from 'vitest';
import { JOB_CATALOG, JOB_QUEUES, jobsOf, QUEUES, type JobName } from './catalog.js';

describe('the job catalog', () => {
  it('puts every job on its declared queue, and every queue carries some job', () => {
    for (const name of Object.keys(JOB_CATALOG) as JobName[]) expect(JOB_CATALOG[name].queue).toBe(JOB_QUEUES[name]);
    for (const queue of Object.values(QUEUES)) expect(jobsOf(queue).length, queue).toBeGreaterThan(0);
  });
});
