import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HttpClient } from '../support/http.js';
import { freePort } from '../support/ports.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The typical self-hosted flow with real builder and deployer processes. The test plays the
 * listener agent over the listener agent protocol (docs/api.md) — the one part that cannot exist here (it would run in a
 * customer's Kubernetes cluster): it polls the desired state and reports what it "applied".
 */
const SECRET = 'agent-secret-value-7f3a9c';

let api: TestApi;
let builder: ServiceProcess;
let deployer: ServiceProcess;
let listenerId: string;
let agent: HttpClient;
let deployerHealthPort: number;

beforeAll(async () => {
  api = await startTestApi();
  api.relay.start();
  deployerHealthPort = await freePort();
  [builder, deployer] = await Promise.all([
    startService('builder', serviceEnv(api)),
    startService('deployer', serviceEnv(api, { SLIPWAY_WORKER_HEALTH_PORT: String(deployerHealthPort) })),
  ]);
  const res = await api.http.post('/v2/listeners', {
    compute_type: 'k8s',
    compute_id: 'prod-eu',
    compute_config: { k8s_namespaces: ['agents'] },
  });
  listenerId = res.body.id;
  agent = api.http.as(await api.mintKey({ listenerId }));
}, 60_000);

afterAll(async () => {
  await Promise.all([builder?.stop(), deployer?.stop()]);
  await api?.close();
});

interface DesiredEntry {
  deployment_id: string;
  revision_id: string;
  action: 'apply' | 'delete';
  image_uri: string;
  secrets: Array<{ name: string; value: string }>;
  manifests: unknown[];
}

/** One agent loop: wait until the desired state holds an entry for this revision, then report. */
async function agentApplies(
  deploymentId: string,
  revisionId: string,
  status: 'DEPLOYED' | 'DEPLOY_FAILED' = 'DEPLOYED',
  message = 'rolled out',
) {
  const entry = await eventually(
    async () => {
      const res = await agent.get(`/v2/listeners/${listenerId}/desired-state`);
      expect(res.status).toBe(200);
      return (res.body.deployments as DesiredEntry[]).find((e) => e.revision_id === revisionId && e.action === 'apply');
    },
    (e) => !!e,
  );
  expect(entry!.deployment_id).toBe(deploymentId);
  const report = await agent.post(`/v2/listeners/${listenerId}/reports`, {
    revisions: [{ revision_id: revisionId, status, message }],
  });
  expect(report.status).toBe(200);
  return entry!;
}

/** The value of one Prometheus sample with exactly these labels (in any order), or NaN. */
function sample(text: string, name: string, labels: Record<string, string>): number {
  const wanted = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(',');
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)\{(.*)\} (\S+)$/.exec(line);
    if (m?.[1] === name && m[2]!.split(',').sort().join(',') === wanted) return Number(m[3]);
  }
  return Number.NaN;
}

const revisionOf = async (deploymentId: string, revisionId: string) =>
  (await api.http.get(`/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body;
const deploymentOf = async (id: string) => (await api.http.get(`/v2/deployments/${id}`)).body;
const patchImage = async (id: string, tag: string) => {
  const res = await api.http.patch(`/v2/deployments/${id}`, {
    source_revision_config: { image_uri: `registry.example/agent:${tag}` },
  });
  expect(res.status).toBe(200);
  return res.body.latest_revision_id as string;
};

describe('external_container deployment through the listener runtime', () => {
  let deploymentId: string;
  let firstRevision: string;

  it('reaches DEPLOYED and sets active_revision_id', async () => {
    const res = await api.http.post('/v2/deployments', {
      name: 'support-agent',
      source: 'external_container',
      source_config: { listener_id: listenerId, listener_config: { k8s_namespace: 'agents' } },
      source_revision_config: { image_uri: 'registry.example/agent:1' },
      secrets: [{ name: 'OPENAI_API_KEY', value: SECRET }],
    });
    expect(res.status).toBe(201);
    deploymentId = res.body.id;
    firstRevision = res.body.latest_revision_id;

    const entry = await agentApplies(deploymentId, firstRevision);
    expect(entry.image_uri).toBe('registry.example/agent:1');
    expect(entry.secrets).toEqual([{ name: 'OPENAI_API_KEY', value: SECRET }]);
    expect(entry.manifests.length).toBeGreaterThan(0);

    const rev = await revisionOf(deploymentId, firstRevision);
    expect(rev.status).toBe('DEPLOYED');
    const d = await eventually(
      () => deploymentOf(deploymentId),
      (x) => x.status === 'READY',
    );
    expect(d.active_revision_id).toBe(firstRevision);
    const history = await api.dataSource.query(
      `SELECT to_status FROM revision_events WHERE revision_id = $1 ORDER BY id`,
      [firstRevision],
    );
    expect(history.map((h: any) => h.to_status)).toEqual(['AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED']);

    // The deployer process exports its own job metrics on its health port.
    const metrics = await (await fetch(`http://127.0.0.1:${deployerHealthPort}/metrics`)).text();
    const labels = { service: 'deployer', queue: 'rollouts', job: 'rollout.revision', outcome: 'completed' };
    expect(sample(metrics, 'slipway_worker_jobs_total', labels)).toBeGreaterThanOrEqual(1);
    expect(sample(metrics, 'slipway_worker_job_duration_seconds_count', labels)).toBeGreaterThanOrEqual(1);
  });

  it('makes a new revision on PATCH only in the contract cases', async () => {
    const before = (await api.http.get(`/v2/deployments/${deploymentId}/revisions?limit=100`)).body.resources.length;
    const noRevision = await api.http.patch(`/v2/deployments/${deploymentId}`, {
      source_config: { build_on_push: true },
    });
    expect(noRevision.body.latest_revision_id).toBe(firstRevision);
    const second = await patchImage(deploymentId, '2');
    expect(second).not.toBe(firstRevision);
    expect((await api.http.get(`/v2/deployments/${deploymentId}/revisions?limit=100`)).body.resources).toHaveLength(
      before + 1,
    );
    await agentApplies(deploymentId, second);
    expect((await deploymentOf(deploymentId)).active_revision_id).toBe(second);
  });

  it('queues revisions behind the one in flight; all but the newest end SKIPPED', async () => {
    const inFlight = await patchImage(deploymentId, '3');
    await eventually(
      () => revisionOf(deploymentId, inFlight),
      (r) => r.status === 'DEPLOYING',
    );
    const waiting = [
      await patchImage(deploymentId, '4'),
      await patchImage(deploymentId, '5'),
      await patchImage(deploymentId, '6'),
    ];
    for (const id of waiting) expect((await revisionOf(deploymentId, id)).status).toBe('QUEUED');

    await agentApplies(deploymentId, inFlight);
    const newest = waiting.at(-1)!;
    await agentApplies(deploymentId, newest);
    expect((await revisionOf(deploymentId, newest)).status).toBe('DEPLOYED');
    for (const id of waiting.slice(0, -1)) {
      const r = await revisionOf(deploymentId, id);
      expect(r.status).toBe('SKIPPED');
      expect(r.status_message).toContain(newest);
    }
    expect((await deploymentOf(deploymentId)).active_revision_id).toBe(newest);
  });

  it('redeploy makes an old image active again without a new build', async () => {
    const res = await api.http.post(`/v2/deployments/${deploymentId}/revisions/${firstRevision}/redeploy`);
    expect(res.status).toBe(200);
    const rollback = res.body.latest_revision_id;
    const entry = await agentApplies(deploymentId, rollback);
    expect(entry.image_uri).toBe('registry.example/agent:1');
    expect(entry.secrets).toEqual([{ name: 'OPENAI_API_KEY', value: SECRET }]);
    const rev = await revisionOf(deploymentId, rollback);
    expect(rev).toMatchObject({
      status: 'DEPLOYED',
      redeployed_from: firstRevision,
      image_uri: 'registry.example/agent:1',
    });
    expect((await deploymentOf(deploymentId)).active_revision_id).toBe(rollback);
  });

  it('interruption leaves the previous active revision serving', async () => {
    const active = (await deploymentOf(deploymentId)).active_revision_id;
    const doomed = await patchImage(deploymentId, 'broken');
    await eventually(
      () => revisionOf(deploymentId, doomed),
      (r) => r.status === 'DEPLOYING',
    );
    const res = await api.http.post(`/v2/deployments/${deploymentId}/revisions/${doomed}/interruption`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('INTERRUPTED');
    expect((await deploymentOf(deploymentId)).active_revision_id).toBe(active);
    const desired = await agent.get(`/v2/listeners/${listenerId}/desired-state`);
    expect(desired.body.deployments.find((e: DesiredEntry) => e.revision_id === doomed)).toBeUndefined();
    // A late report for the interrupted revision is rejected, not applied.
    const late = await agent.post(`/v2/listeners/${listenerId}/reports`, {
      revisions: [{ revision_id: doomed, status: 'DEPLOYED' }],
    });
    expect(late.body.rejected.map((r: any) => r.revision_id)).toEqual([doomed]);
    expect((await revisionOf(deploymentId, doomed)).status).toBe('INTERRUPTED');
  });

  it('a failed rollout keeps the previous revision active', async () => {
    const active = (await deploymentOf(deploymentId)).active_revision_id;
    const failing = await patchImage(deploymentId, 'crashes');
    await agentApplies(deploymentId, failing, 'DEPLOY_FAILED', 'CrashLoopBackOff');
    const rev = await revisionOf(deploymentId, failing);
    expect(rev.status).toBe('DEPLOY_FAILED');
    expect(rev.status_message).toContain('CrashLoopBackOff');
    expect((await deploymentOf(deploymentId)).active_revision_id).toBe(active);
  });

  it('DELETE ends in 404 once the listener confirms the teardown', async () => {
    expect((await api.http.delete(`/v2/deployments/${deploymentId}`)).status).toBe(204);
    expect((await deploymentOf(deploymentId)).status).toBe('AWAITING_DELETE');
    const entry = await eventually(
      async () =>
        ((await agent.get(`/v2/listeners/${listenerId}/desired-state`)).body.deployments as DesiredEntry[]).find(
          (e) => e.deployment_id === deploymentId,
        ),
      (e) => !!e,
    );
    expect(entry!.action).toBe('delete');
    const report = await agent.post(`/v2/listeners/${listenerId}/reports`, { deleted_deployments: [deploymentId] });
    expect(report.status).toBe(200);
    expect((await api.http.get(`/v2/deployments/${deploymentId}`)).status).toBe(404);
  });

  it('never put the secret value in a response (but the desired state), a log line or a job payload', async () => {
    expect(api.logs.text()).not.toContain(SECRET);
    expect(builder.output()).not.toContain(SECRET);
    expect(deployer.output()).not.toContain(SECRET);
    const payloads = await api.dataSource.query(`SELECT payload::text AS p FROM outbox`);
    for (const { p } of payloads) expect(p).not.toContain(SECRET);
    for (const queue of Object.values(api.queues)) {
      for (const job of await queue.getJobs(['completed', 'failed', 'waiting', 'delayed', 'active'])) {
        expect(JSON.stringify(job.data)).not.toContain(SECRET);
      }
    }
  });
});
