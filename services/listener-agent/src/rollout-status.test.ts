import type { V1Deployment, V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { backoffDelay } from './agent.js';
import { rolloutOf } from './rollout-status.js';

const LABEL = 'slipway.dev/revision-id';

const deployment = (status: V1Deployment['status'], generation = 2): V1Deployment => ({
  metadata: { name: 'web', generation },
  spec: { replicas: 2, selector: {}, template: {} },
  status,
});
const done = { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2 };
const pod = (revision: string | undefined, reason: string): V1Pod => ({
  metadata: { name: 'web-abc', labels: revision ? { [LABEL]: revision } : {} },
  status: {
    containerStatuses: [
      {
        name: 'server',
        image: 'x',
        imageID: '',
        ready: false,
        restartCount: 0,
        state: { waiting: { reason, message: 'why' } },
      },
    ],
  },
});
const store = (ready: number): V1StatefulSet => ({
  metadata: { name: 'db', generation: 1 },
  spec: { replicas: 1, selector: {}, serviceName: 'db', template: {} },
  status: { observedGeneration: 1, replicas: 1, readyReplicas: ready },
});

describe('rolloutOf', () => {
  it('is done only when every Deployment observed its spec with all replicas updated and available, and stores are ready', () => {
    expect(rolloutOf('r2', [deployment(done)], [store(1)], [], LABEL).state).toBe('done');
    expect(rolloutOf('r2', [deployment({ ...done, observedGeneration: 1 })], [], [], LABEL).state).toBe('progressing');
    expect(rolloutOf('r2', [deployment({ ...done, updatedReplicas: 1 })], [], [], LABEL).state).toBe('progressing');
    // Old pods still running beside the new ones: not finished.
    expect(rolloutOf('r2', [deployment({ ...done, replicas: 3 })], [], [], LABEL).state).toBe('progressing');
    expect(rolloutOf('r2', [deployment(done)], [store(0)], [], LABEL).state).toBe('progressing');
  });

  it('fails with the Kubernetes reason on a fatal pod state of this revision or of a store, not of an older revision', () => {
    expect(rolloutOf('r2', [deployment(done)], [], [pod('r2', 'ImagePullBackOff')], LABEL)).toEqual({
      state: 'failed',
      message: 'ImagePullBackOff: pod web-abc, container server: why',
    });
    expect(rolloutOf('r2', [deployment(done)], [], [pod(undefined, 'CrashLoopBackOff')], LABEL).state).toBe('failed');
    expect(rolloutOf('r2', [deployment(done)], [], [pod('r1', 'CrashLoopBackOff')], LABEL).state).toBe('done');
    // A first pull error may be transient: the kubelet retries before backing off.
    expect(rolloutOf('r2', [deployment(done)], [], [pod('r2', 'ErrImagePull')], LABEL).state).toBe('done');
  });

  it('fails on ProgressDeadlineExceeded with its message', () => {
    const stuck = deployment({
      ...done,
      updatedReplicas: 1,
      conditions: [
        {
          type: 'Progressing',
          status: 'False',
          reason: 'ProgressDeadlineExceeded',
          message: 'ReplicaSet "web-1" has timed out progressing.',
        },
      ],
    });
    expect(rolloutOf('r2', [stuck], [], [], LABEL)).toEqual({
      state: 'failed',
      message: 'ProgressDeadlineExceeded: Deployment web: ReplicaSet "web-1" has timed out progressing.',
    });
  });
});

describe('backoffDelay', () => {
  it('polls at the interval while connected, then doubles with jitter up to the ceiling', () => {
    expect(backoffDelay(0, 1000, 60_000)).toBe(1000);
    expect(backoffDelay(1, 1000, 60_000, () => 0)).toBe(1000);
    expect(backoffDelay(1, 1000, 60_000, () => 1)).toBe(2000);
    expect(backoffDelay(3, 1000, 60_000, () => 0.5)).toBe(6000);
    expect(backoffDelay(40, 1000, 60_000, () => 1)).toBe(60_000);
    expect(backoffDelay(40, 1000, 60_000, () => 0)).toBe(30_000);
  });
});
