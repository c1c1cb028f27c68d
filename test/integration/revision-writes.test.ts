import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RevisionReads, RevisionRepository } from '@slipway/pipeline';
import type { RevisionStatus } from '@slipway/domain';
import { transitionRevision, type RevisionTransitionOptions } from '../../libs/pipeline/src/status-transitions.js';
import { createRepohostDeployment } from '../support/fixtures.js';
import { recordStatements } from '../support/statements.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The one write path of revision rows (docs/architecture.md, Rules): attempts and deadlines are
 * never set by hand; they follow from the phase a transition enters, a retry or a start, and
 * every write is conditional on the status (and attempt) the caller expects.
 */

let api: TestApi;
let listenerId: string;

beforeAll(async () => {
  api = await startTestApi();
  const res = await api.http.post('/v2/listeners', {
    compute_type: 'k8s',
    compute_id: 'writes',
    compute_config: { k8s_namespaces: null },
  });
  listenerId = res.body.id;
});
afterAll(async () => {
  await api?.close();
});

interface Row {
  status: string;
  attempt: number;
  deadline_ms: number | null;
  started: boolean;
  heartbeat_at: Date | null;
}

async function row(id: string): Promise<Row> {
  const [r] = await api.dataSource.query(
    `SELECT status, attempt, (extract(epoch FROM deadline_at) * 1000)::bigint AS deadline_ms, ` +
      `started_at IS NOT NULL AS started, heartbeat_at
       FROM revisions WHERE id = $1`,
    [id],
  );
  return { ...r, deadline_ms: r.deadline_ms === null ? null : Number(r.deadline_ms) };
}

let n = 0;
async function imageRevision(): Promise<string> {
  const res = await api.http.post('/v2/deployments', {
    name: `writes-${++n}`,
    source: 'external_container',
    source_config: { listener_id: listenerId },
    source_revision_config: { image_uri: 'registry.example/a:1' },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.latest_revision_id;
}

/** The raw status write (internal to libs/pipeline, whose callers reach it through RevisionFlow) beside the repository's writes. */
interface Writes extends Pick<RevisionRepository, 'beat' | 'recordConfig'> {
  transition(
    id: string,
    to: RevisionStatus,
    options?: RevisionTransitionOptions,
  ): ReturnType<typeof transitionRevision>;
}
const tx = <T>(work: (revisions: Writes) => Promise<T>) =>
  api.dataSource.transaction((m) => {
    const rows = new RevisionRepository(m);
    return work({
      transition: (id, to, options) => transitionRevision(m, id, to, options, api.config.pipeline),
      beat: (...args) => rows.beat(...args),
      recordConfig: (...args) => rows.recordConfig(...args),
    });
  });
/** A transaction that moved revision `id` from `from` to `to` and holds it uncommitted until `commit`. */
async function heldTransition(
  id: string,
  to: RevisionStatus,
  from: RevisionStatus,
): Promise<{ commit: () => Promise<void> }> {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let moved!: () => void;
  const movedInIt = new Promise<void>((r) => (moved = r));
  const done = tx(async (r) => {
    expect(await r.transition(id, to, { from: [from] })).not.toBeNull();
    moved();
    await held;
  });
  await movedInIt;
  return {
    commit: () => {
      release();
      return done;
    },
  };
}
const near = (ms: number | null, target: number) => expect(Math.abs((ms ?? 0) - target)).toBeLessThan(60_000);

describe('revision writes', () => {
  it('a start takes the slot with the enqueue deadline; entering a phase restarts its clock at attempt 0', async () => {
    const id = await imageRevision();
    const created = await row(id);
    expect(created).toMatchObject({ status: 'CREATING', attempt: 0, started: true });
    near(created.deadline_ms, Date.now() + api.config.pipeline.enqueueDeadlineMs);

    await api.relay.drain();
    const handed = await row(id);
    expect(handed).toMatchObject({ status: 'AWAITING_DEPLOY', attempt: 0 });
    near(handed.deadline_ms, Date.now() + api.config.pipeline.rolloutDeadlineMs);
  });

  it('a write that expects the status another transaction is setting waits for it, then applies', async () => {
    // The relay's hand-off commits after its job reached Redis: a worker that claims the job at
    // once must see the hand-off, not skip the row because its old status does not match.
    const id = await imageRevision();
    await api.relay.drain();
    const a = await heldTransition(id, 'DEPLOYING', 'AWAITING_DEPLOY');
    let bDone = false;
    const b = tx((r) => r.transition(id, 'DEPLOYED', { from: ['DEPLOYING'] })).finally(() => (bDone = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(bDone).toBe(false); // waiting for A's lock, not judged on the old status
    await a.commit();
    expect(await b).toMatchObject({ from: 'DEPLOYING', to: 'DEPLOYED' });
    expect((await row(id)).status).toBe('DEPLOYED');
  });

  it("a rollout job's read waits for a hand-off still committing, and takes no row lock once it has", async () => {
    // The relay adds the rollout job before its hand-off (CREATING → AWAITING_DEPLOY) commits.
    const id = await imageRevision();
    const handOff = await heldTransition(id, 'AWAITING_DEPLOY', 'CREATING');
    const reads = new RevisionReads(api.dataSource.manager);
    let done = false;
    const early = reads.loadForRollout(id, 0).finally(() => (done = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(done).toBe(false); // waiting for the hand-off's lock, not judging the job on CREATING
    await handOff.commit();
    expect(await early).toMatchObject({ status: 'AWAITING_DEPLOY', attempt: 0 });

    const recording = recordStatements();
    try {
      expect(await reads.loadForRollout(id, 0)).toMatchObject({ status: 'AWAITING_DEPLOY', attempt: 0 });
      // A job of another attempt is not judged on the plain read: it waits like the first.
      expect(await reads.loadForRollout(id, 1)).toMatchObject({ status: 'AWAITING_DEPLOY', attempt: 0 });
    } finally {
      recording.stop();
    }
    const sent = recording.sent.filter((t) => /FROM revisions r JOIN deployments d/.test(t));
    expect(sent.map((t) => /FOR SHARE/.test(t))).toEqual([false, false, true]);
  });

  it('a retry counts an attempt and keeps the phase deadline; a write at a stale attempt finds nothing', async () => {
    const id = await imageRevision();
    await api.relay.drain();
    const before = await row(id);

    const retried = await tx((r) =>
      r.transition(id, 'AWAITING_DEPLOY', { from: ['AWAITING_DEPLOY'], attempt: 0, retry: true, message: 'again' }),
    );
    expect(retried).toMatchObject({ from: 'AWAITING_DEPLOY', to: 'AWAITING_DEPLOY', attempt: 1 });
    expect(await row(id)).toMatchObject({ status: 'AWAITING_DEPLOY', attempt: 1, deadline_ms: before.deadline_ms });

    // The worker of attempt 0 is stale: neither its transition nor its heartbeat lands.
    expect(await tx((r) => r.transition(id, 'DEPLOYING', { attempt: 0 }))).toBeNull();
    expect(await tx((r) => r.beat(id, ['AWAITING_DEPLOY'], 0))).toBe('moved-on');
    expect(await tx((r) => r.beat(id, ['AWAITING_DEPLOY'], 1))).toBe('alive');

    // Within the phase, attempt and deadline carry over; a terminal status clears the deadline.
    await tx((r) => r.transition(id, 'DEPLOYING', { attempt: 1 }));
    expect(await row(id)).toMatchObject({ status: 'DEPLOYING', attempt: 1, deadline_ms: before.deadline_ms });
    await tx((r) => r.transition(id, 'DEPLOY_FAILED', { message: 'no' }));
    expect(await row(id)).toMatchObject({ status: 'DEPLOY_FAILED', attempt: 1, deadline_ms: null });

    const events = await api.dataSource.query(
      `SELECT from_status, to_status, message FROM revision_events WHERE revision_id = $1 ORDER BY id`,
      [id],
    );
    expect(events).toContainEqual({ from_status: 'AWAITING_DEPLOY', to_status: 'AWAITING_DEPLOY', message: 'again' });
  });

  it('moving from the build phase into the rollout phase starts the rollout at attempt 0 with its own deadline', async () => {
    const deployment = await createRepohostDeployment(api, `writes-built-${++n}`);
    const id = deployment.latest_revision_id as string;
    await api.relay.drain();
    expect(await row(id)).toMatchObject({ status: 'AWAITING_BUILD', attempt: 0 });
    await tx((r) => r.transition(id, 'AWAITING_BUILD', { attempt: 0, retry: true }));
    await tx((r) => r.transition(id, 'BUILDING', { attempt: 1, set: { heartbeatAt: new Date() } }));
    const building = await row(id);
    expect(building).toMatchObject({ status: 'BUILDING', attempt: 1 });
    near(building.deadline_ms, Date.now() + api.config.pipeline.buildDeadlineMs);

    expect(await tx((r) => r.recordConfig(id, ['BUILDING'], 0, { repo_commit_sha: 'stale' }))).toBe(false);
    expect(await tx((r) => r.recordConfig(id, ['BUILDING'], 1, { repo_commit_sha: 'abc' }))).toBe(true);

    await tx((r) => r.transition(id, 'AWAITING_DEPLOY', { attempt: 1, set: { heartbeatAt: null } }));
    const rollout = await row(id);
    expect(rollout).toMatchObject({ status: 'AWAITING_DEPLOY', attempt: 0, heartbeat_at: null });
    near(rollout.deadline_ms, Date.now() + api.config.pipeline.rolloutDeadlineMs);
    const [config] = await api.dataSource.query(
      `SELECT source_revision_config->>'repo_commit_sha' AS sha FROM revisions WHERE id = $1`,
      [id],
    );
    expect(config.sha).toBe('abc');
  });
});
