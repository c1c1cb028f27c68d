import { describe, expect, it } from 'vitest';
import { initialDeploymentState, rolloutProvisionsFirst } from './deployment-rules.js';

const ID = '7c9e6679-7425-40de-944b-e07fc1f90ae7';

describe('rolloutProvisionsFirst', () => {
  it("provisions a deployment of this machine's that awaits its database, whatever its create recorded", () => {
    const created = initialDeploymentState('agent', ID, null);
    expect(created.provision).toBe(true);
    expect(
      rolloutProvisionsFirst({
        status: 'AWAITING_DATABASE',
        listenerId: null,
        databaseRecorded: created.databaseName !== null,
      }),
    ).toBe(true);
  });

  it("leaves a listener's deployment whose create recorded the name to its first rollout's begin", () => {
    const created = initialDeploymentState('agent', ID, 'a listener');
    expect(created.provision).toBe(false);
    expect(
      rolloutProvisionsFirst({
        status: 'AWAITING_DATABASE',
        listenerId: 'a listener',
        databaseRecorded: created.databaseName !== null,
      }),
    ).toBe(false);
    // One created before the name was recorded at create still gets it from the rollout.
    expect(
      rolloutProvisionsFirst({ status: 'AWAITING_DATABASE', listenerId: 'a listener', databaseRecorded: false }),
    ).toBe(true);
  });

  it('provisions nothing once the deployment is past AWAITING_DATABASE', () => {
    for (const status of ['READY', 'UNKNOWN', 'DELETING'])
      for (const listenerId of [null, 'a listener'])
        expect(rolloutProvisionsFirst({ status, listenerId, databaseRecorded: true })).toBe(false);
  });
});
