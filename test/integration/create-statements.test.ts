import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { recordStatements, transactionsIn } from '../support/statements.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Round trips to Postgres per `POST /v2/deployments`, and where the workspace lock sits in them.
 * Creates were serialised behind about 20 statements each, 19 in the transaction; then 14, plus 3
 * for the workspace's deployment quota (its lock, its quotas, the count) taken first, which made
 * every create of a workspace wait for the whole transaction of the one before. Then 11: the quota
 * check came last (lock, then quotas and count in one statement), the answer is built from the
 * rows written, not re-read, and the deployment insert carries its tracing project's link and the
 * revision insert its latest-revision update (each a CTE of one statement). Now 10: the quota is
 * a free slot row claimed with SKIP LOCKED in one statement that also reads the quotas, with no
 * workspace lock. Now 9: the deployment's provisioning job and its first revision's job are
 * recorded in one outbox insert. Now 8: the tracing project (new, or re-attached) is inserted
 * by the deployment's insert. Now 7: the first revision is inserted started (its hand-off
 * deadline set by the insert, not by a second write). Now 6: the revision's insert also records
 * the outbox jobs (a data-modifying CTE; the outbox's statement trigger sends the relays'
 * notification). Now 5: the deployment's insert reads the listener it names (a subquery of its
 * RETURNING) for the create's checks, which then run on what it returned. Now 4: the slot claim
 * rides on the revision's statement (a CTE; its value, the claim and the quotas, is that
 * statement's RETURNING), still the last write before COMMIT. A create that finds no free slot
 * (the first of each slice of 256, or after a quota change) rolls back, lays the slots out in a
 * transaction of its own, and runs again (services/api/src/services/deployment-slots.ts). Counts the statements
 * of the create's transaction — the api runs in this process, and nothing else of it writes
 * meanwhile (the relay is not started) — and then again with the real builder and deployer
 * taking every create's jobs and the api's own relay running, as `npm start` runs them. The
 * budget is today's count: a change that adds round trips to the hot path must say so here.
 */

let api: TestApi;
let listenerId: string;
let recording: ReturnType<typeof recordStatements>;
let sent: string[];

beforeAll(async () => {
  api = await startTestApi();
  const res = await api.http.post('/v2/listeners', {
    compute_type: 'k8s',
    compute_id: 'count',
    compute_config: { k8s_namespaces: null },
  });
  listenerId = res.body.id;
  recording = recordStatements();
  sent = recording.sent;
});
afterAll(async () => {
  recording?.stop();
  await api?.close();
});

/**
 * The statements of the write transaction `work` runs, START TRANSACTION to COMMIT. What lies
 * outside (the API key's lookup when its cache entry expired on a loaded machine) is not the
 * create's own cost.
 */
async function transactionOf(work: () => Promise<unknown>): Promise<string[]> {
  sent.length = 0;
  await work();
  const begin = sent.findIndex((s) => /^(START TRANSACTION|BEGIN)/i.test(s));
  const end = sent.findIndex((s, i) => i > begin && /^COMMIT/i.test(s));
  expect(begin, sent.join('\n')).toBeGreaterThanOrEqual(0);
  return sent.slice(begin, end + 1);
}

let n = 0;
const create = () =>
  api.http.post('/v2/deployments', {
    name: `count-${++n}`,
    source: 'external_container',
    source_config: { listener_id: listenerId },
    source_revision_config: { image_uri: 'registry.example/a:1' },
    secrets: [{ name: 'API_TOKEN', value: 'tok' }],
  });

describe('statements per create', () => {
  it('an image deployment with one secret costs at most 4 round trips, BEGIN and COMMIT included', async () => {
    await create(); // warm: the API key is cached after its first use
    const statements = await transactionOf(async () => expect((await create()).status).toBe(201));
    expect(statements.length, statements.join('\n')).toBeLessThanOrEqual(4);
    expect(statements.filter((s) => /^\s*(SELECT|INSERT|UPDATE|WITH)/i.test(s)).length).toBeGreaterThanOrEqual(2);
  });

  it(
    'claims a deployment slot last, with SKIP LOCKED and no workspace lock: ' +
      'creates of a workspace do not wait for each other',
    async () => {
      const statements = await transactionOf(async () => expect((await create()).status).toBe(201));
      expect(
        statements.filter((s) => /FROM workspaces WHERE id = \$1 FOR (NO KEY )?UPDATE/.test(s)),
        statements.join('\n'),
      ).toEqual([]);
      const claim = statements.findIndex((s) => /UPDATE deployment_slots/.test(s) && /FOR UPDATE SKIP LOCKED/.test(s));
      const lastWrite = statements.findLastIndex((s) => /^\s*(INSERT|UPDATE|WITH)/i.test(s));
      expect(claim, statements.join('\n')).toBe(lastWrite);
      expect(statements.length - claim, statements.join('\n')).toBe(2); // the claim, COMMIT
    },
  );

  it('finding no free slot, rolls back holding no slot lock, lays slots out under the workspace lock alone, and runs again', async () => {
    // A changed quota: the free slots were laid out for another one, so the claim takes none.
    const admin = api.http.as(await api.mintKey({ scope: 'organization', workspaceId: null, role: 'admin' }));
    expect((await admin.put(`/v2/workspaces/${api.workspaceId}/quotas`, { deployments: 500 })).status).toBe(200);
    sent.length = 0;
    expect((await create()).status).toBe(201);
    const begins = sent.flatMap((s, i) => (/^(START TRANSACTION|BEGIN)/i.test(s) ? [i] : []));
    const [first, layOut, again] = begins.slice(-3).map((at, i, all) => sent.slice(at, all[i + 1]));
    const all = sent.join('\n');
    const workspaceLock = (s: string) => /FROM workspaces WHERE id = \$1 FOR (NO KEY )?UPDATE/.test(s);
    // The create claimed nothing and waited for nothing: it never asked for the workspace lock.
    expect(
      first!.some((s) => /UPDATE deployment_slots/.test(s)),
      all,
    ).toBe(true);
    expect(first!.filter(workspaceLock), all).toEqual([]);
    expect(first!.at(-1), all).toMatch(/^ROLLBACK/i);
    // Laying out: the workspace lock before any other statement, and no deployment written.
    expect(workspaceLock(layOut![1] ?? ''), all).toBe(true);
    expect(
      layOut!.some((s) => /INSERT INTO deployment_slots/.test(s)),
      all,
    ).toBe(true);
    expect(
      layOut!.some((s) => /INSERT INTO "?deployments"?/.test(s)),
      all,
    ).toBe(false);
    expect(layOut!.at(-1), all).toMatch(/^COMMIT/i);
    // The create again, as any other: its claim takes a slot of the new slice.
    expect(again!.filter(workspaceLock), all).toEqual([]);
    expect(again!.length, all).toBeLessThanOrEqual(4);
    expect(again!.at(-1), all).toMatch(/^COMMIT/i);
  });

  it('answers with what a GET of the new deployment returns, though it re-reads nothing', async () => {
    const created = await api.http.post('/v2/deployments', {
      name: `count-${++n}`,
      source: 'external_container',
      source_config: { listener_id: listenerId, resource_spec: { min_scale: 1 } },
      source_revision_config: { image_uri: 'registry.example/a:2' },
      secrets: [
        { name: 'B_TOKEN', value: 'b' },
        { name: 'A_TOKEN', value: 'a' },
      ],
      image_version: '1.2.3',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const read = await api.http.get(`/v2/deployments/${created.body.id}`);
    expect(read.status).toBe(200);
    // The status may have moved on since (the pipeline runs); everything else is as written.
    expect({ ...created.body, status: null, updated_at: null }).toEqual({
      ...read.body,
      status: null,
      updated_at: null,
    });
    expect(created.body.latest_revision_id).toEqual(expect.any(String));
    expect(Date.parse(created.body.created_at)).toBeGreaterThan(Date.now() - 60_000);
  });
});

describe("statements per create, with the real builder and deployer taking every create's jobs", () => {
  let builder: ServiceProcess | undefined;
  let deployer: ServiceProcess | undefined;

  beforeAll(async () => {
    // Generous: on a loaded shared machine, compiling a service's sources at start takes a while.
    [builder, deployer] = await Promise.all([
      startService('builder', serviceEnv(api), 90_000),
      startService('deployer', serviceEnv(api), 90_000),
    ]);
    // The api's own relay too, as the api process runs it: its statements share the pool.
    api.relay.start();
  }, 180_000);
  afterAll(async () => {
    await api.relay.stop();
    await Promise.all([builder?.stop(), deployer?.stop()]);
  });

  it('20 creates at once: each committed create is at most 4 statements, and its only job is its ' +
    'rollout.revision, which the deployer takes to DEPLOYING (the deployment, created AWAITING_DATABASE, READY then)', async () => {
    const from = recording.log.length;
    const created = await Promise.all(Array.from({ length: 20 }, () => create()));
    for (const res of created) expect(res.status, JSON.stringify(res.body)).toBe(201);
    // Told apart by connection: the relay's passes and the other creates interleave with each.
    const transactions = transactionsIn(recording.log.slice(from));
    const creates = transactions.filter(
      (t) => t.some((s) => /INSERT INTO tracing_projects/.test(s)) && /^COMMIT/i.test(t.at(-1)!),
    );
    expect(creates.length, transactions.map((t) => t.join('\n')).join('\n\n')).toBe(20);
    for (const t of creates) expect(t.length, t.join('\n')).toBeLessThanOrEqual(4);

    const ids = created.map((res) => res.body.id as string);
    const revisions = created.map((res) => res.body.latest_revision_id as string);
    for (const res of created) expect(res.body.status).toBe('AWAITING_DATABASE');
    await eventually(
      async () =>
        (await api.dataSource.query(`SELECT status FROM revisions WHERE id = ANY($1::uuid[])`, [revisions])).map(
          (r: { status: string }) => r.status,
        ),
      (all: string[]) => all.length === 20 && all.every((st) => st === 'DEPLOYING'),
      60_000,
    );
    const jobs = await api.dataSource.query(
      `SELECT job_name, count(*)::int AS n, count(sent_at)::int AS sent FROM outbox
          WHERE payload->>'deploymentId' = ANY($1::text[]) OR payload->>'revisionId' = ANY($2::text[])
          GROUP BY job_name`,
      [ids, revisions],
    );
    expect(jobs).toEqual([{ job_name: 'rollout.revision', n: 20, sent: 20 }]);
    const deployments = await api.dataSource.query(
      `SELECT DISTINCT status FROM deployments WHERE id = ANY($1::uuid[])`,
      [ids],
    );
    expect(deployments).toEqual([{ status: 'READY' }]);
    // Nothing to provision (the create recorded the database name): each deployment became
    // READY in the transaction that began its rollout, not in one of its own before it.
    const ready = await api.dataSource.query(
      `SELECT d.deployment_id, d.xmin::text = r.xmin::text AS together
         FROM events d JOIN events r ON r.deployment_id = d.deployment_id
        WHERE d.deployment_id = ANY($1::uuid[])
          AND d.type = 'deployment.status_changed' AND d.data->>'to' = 'READY'
          AND r.type = 'revision.status_changed' AND r.data->>'to' = 'DEPLOYING'`,
      [ids],
    );
    expect(ready).toHaveLength(20);
    expect(ready.filter((r: { together: boolean }) => !r.together)).toEqual([]);
  }, 120_000);
});
