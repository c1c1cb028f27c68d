import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../support/http.js';
import { startKubeStandIn, type KubeStandIn } from '../support/kube-stand-in/server.js';
import type { KubeObject } from '../support/kube-stand-in/store.js';
import { freePort } from '../support/ports.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Self-hosted deployments end to end: api, builder, deployer and the listener agent run as
 * separate processes, the way they run in production; the agent reaches the api through a TCP
 * proxy the test can cut.
 *
 * The cluster is a PROTOCOL-LEVEL STAND-IN for the Kubernetes API server
 * (test/support/kube-stand-in): no kube-apiserver is installable on these machines. It speaks
 * the real REST API over TLS (server-side apply, label selectors, propagated deletes, status,
 * pod logs) with a simulated kubelet that moves Deployment and pod status. The agent is
 * configured with an ordinary kubeconfig and does not know it is not a real cluster.
 */

const NS = 'agents';
const SECRET = 'sk-live-agent-9d2c71e4b5';
const IMAGE = (tag: string) => `registry.example/support-agent:${tag}`;

let api: TestApi;
let apiProcess: ServiceProcess;
let builder: ServiceProcess;
let deployer: ServiceProcess;
let agent: ServiceProcess;
let http: HttpClient;
let k8s: KubeStandIn;
let proxy: TcpProxy;
let agentEnv: Record<string, string>;
let workDir: string;
let listenerId: string;

beforeAll(async () => {
  api = await startTestApi();
  k8s = await startKubeStandIn({ podStartMs: 100, msPerDeadlineSecond: 20 });
  workDir = mkdtempSync(path.join(tmpdir(), 'slipway-agent-e2e-'));
  const kubeconfig = path.join(workDir, 'kubeconfig');
  writeFileSync(kubeconfig, k8s.kubeconfig(NS), { mode: 0o600 });

  const apiPort = await freePort();
  [apiProcess, builder, deployer] = await Promise.all([
    // Generous: on a loaded shared machine, compiling a service's sources at start takes a while.
    startService('api', serviceEnv(api, { PORT: String(apiPort), HOST: '127.0.0.1' }), 60_000),
    startService('builder', serviceEnv(api), 60_000),
    startService('deployer', serviceEnv(api), 60_000),
  ]);
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  http = new HttpClient(apiUrl, api.adminKey);
  const listener = await http.post('/v2/listeners', {
    compute_type: 'k8s',
    compute_id: 'prod-eu',
    compute_config: { k8s_namespaces: [NS] },
  });
  expect(listener.status).toBe(201);
  listenerId = listener.body.id;

  proxy = await TcpProxy.start(apiUrl, 80);
  agentEnv = {
    PATH: process.env.PATH ?? '',
    HOME: workDir,
    NODE_ENV: 'test',
    LOG_LEVEL: 'debug',
    SLIPWAY_API_URL: proxy.urlFor(apiUrl),
    SLIPWAY_LISTENER_ID: listenerId,
    SLIPWAY_API_KEY: await api.mintKey({ listenerId }),
    KUBECONFIG: kubeconfig,
    SLIPWAY_AGENT_POLL_INTERVAL_MS: '200',
    SLIPWAY_AGENT_MAX_BACKOFF_MS: '2000',
    SLIPWAY_AGENT_REQUEST_TIMEOUT_MS: '3000',
  };
  agent = await startService('listener-agent', agentEnv, 60_000);
}, 180_000);

afterAll(async () => {
  await Promise.all([agent?.stop(), apiProcess?.stop(), builder?.stop(), deployer?.stop()]);
  await proxy?.refuse();
  await k8s?.close();
  await api?.close();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

// ------------------------------------------------------------------ helpers

const revisionOf = async (deploymentId: string, revisionId: string) =>
  (await http.get(`/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body;
const untilRevision = (deploymentId: string, revisionId: string, status: string, timeoutMs = 30_000) =>
  eventually(
    () => revisionOf(deploymentId, revisionId),
    (r) => r.status === status || ['DEPLOY_FAILED', 'DEPLOYED', 'INTERRUPTED'].includes(r.status),
    timeoutMs,
  ).then((r) => {
    expect(r, JSON.stringify(r)).toMatchObject({ status });
    return r;
  });
const patchImage = async (id: string, tag: string) => {
  const res = await http.patch(`/v2/deployments/${id}`, { source_revision_config: { image_uri: IMAGE(tag) } });
  expect(res.status).toBe(200);
  return res.body.latest_revision_id as string;
};
const objectsOf = (deploymentId: string) =>
  k8s.store.all().filter((o) => o.metadata.labels?.['app.kubernetes.io/instance'] === deploymentId);
const serverDeployment = (name: string) => k8s.store.get('Deployment', NS, name);
const replicaSetsOf = (d: KubeObject) =>
  k8s.store.list('ReplicaSet', NS).filter((rs) => rs.metadata.ownerReferences?.some((r) => r.uid === d.metadata.uid));
const writesSince = (index: number) => k8s.requests.slice(index).filter((r) => r.method !== 'GET');

// ------------------------------------------------------------------ the flow

describe('listener agent against a Kubernetes API', () => {
  const name = 'support-agent';
  let deploymentId: string;
  let servingRevision: string;

  it('rolls an external_container deployment out to DEPLOYED, secrets in Secrets only, pod logs shipped redacted', async () => {
    const res = await http.post('/v2/deployments', {
      name,
      source: 'external_container',
      source_config: { listener_id: listenerId, listener_config: { k8s_namespace: NS } },
      source_revision_config: { image_uri: IMAGE('1') },
      secrets: [{ name: 'OPENAI_API_KEY', value: SECRET }],
    });
    expect(res.status).toBe(201);
    deploymentId = res.body.id;
    servingRevision = res.body.latest_revision_id;

    const rev = await untilRevision(deploymentId, servingRevision, 'DEPLOYED');
    expect(rev.status_message).toMatch(/^Listener reported: Rolled out/);
    expect((await http.get(`/v2/deployments/${deploymentId}`)).body.active_revision_id).toBe(servingRevision);

    // Applied with server-side apply, as field manager slipway, into the listener's namespace.
    const applies = k8s.requests.filter((r) => r.method === 'PATCH');
    expect(applies.length).toBeGreaterThan(0);
    for (const a of applies)
      expect(a).toMatchObject({
        contentType: 'application/apply-patch+yaml',
        fieldManager: 'slipway',
        query: { force: 'true' },
      });
    const server = serverDeployment(name)!;
    expect(server.spec.template.spec.containers[0].image).toBe(IMAGE('1'));
    expect(server.status.conditions.find((c: any) => c.type === 'Available').status).toBe('True');
    expect((k8s.store.get('Secret', NS, `${name}-env`)!.stringData as Record<string, string>).OPENAI_API_KEY).toBe(
      SECRET,
    );
    const workloads = objectsOf(deploymentId).filter((o) => o.kind !== 'Secret');
    expect(workloads.length).toBeGreaterThan(5);
    expect(JSON.stringify(workloads)).not.toContain(SECRET);

    // The stand-in's app prints its environment: the log line arrives, the value does not.
    const logs = await eventually(
      async () =>
        (await http.get(`/v2/deployments/${deploymentId}/revisions/${servingRevision}/logs?type=deploy&limit=1000`))
          .body,
      (b) => JSON.stringify(b).includes('OPENAI_API_KEY=********'),
    );
    expect(JSON.stringify(logs)).toContain(`starting ${IMAGE('1')}`);
    expect(JSON.stringify(logs)).not.toContain(SECRET);
    expect(agent.output()).not.toContain(SECRET);
  });

  it('rolls out a new revision when the image is patched; the old ReplicaSet is scaled down', async () => {
    const second = await patchImage(deploymentId, '2');
    await untilRevision(deploymentId, second, 'DEPLOYED');
    servingRevision = second;
    const server = serverDeployment(name)!;
    expect(server.spec.template.spec.containers[0].image).toBe(IMAGE('2'));
    const sets = replicaSetsOf(server);
    expect(sets).toHaveLength(2);
    const current = sets.find((rs) => rs.spec.template.spec.containers[0].image === IMAGE('2'))!;
    await eventually(
      async () => replicaSetsOf(server).find((rs) => rs.metadata.name !== current.metadata.name)!.spec.replicas,
      (n) => n === 0,
    );
  });

  it('ends DEPLOY_FAILED with ImagePullBackOff, and the old ReplicaSet keeps serving', async () => {
    k8s.kubelet.failImage(IMAGE('broken'), 'ImagePullBackOff');
    const broken = await patchImage(deploymentId, 'broken');
    const rev = await untilRevision(deploymentId, broken, 'DEPLOY_FAILED');
    expect(rev.status_message).toMatch(
      /ImagePullBackOff: pod support-agent-[0-9a-f]+-\w+, container api-server: Back-off pulling image/,
    );

    const server = serverDeployment(name)!;
    const old = replicaSetsOf(server).find((rs) => rs.spec.template.spec.containers[0].image === IMAGE('2'))!;
    expect(old.spec.replicas).toBe(1);
    expect(old.status.readyReplicas).toBe(1);
    const oldPods = k8s.store
      .list('Pod', NS)
      .filter((p) => p.metadata.ownerReferences?.some((r) => r.uid === old.metadata.uid));
    expect(oldPods.map((p) => p.status.phase)).toEqual(['Running']);
    expect(k8s.store.get('Service', NS, name)).toBeDefined();
    expect((await http.get(`/v2/deployments/${deploymentId}`)).body.active_revision_id).toBe(servingRevision);
  });

  it('an agent restarted mid-rollout resumes without re-applying unchanged objects', async () => {
    k8s.kubelet.holdImage(IMAGE('4'));
    const fourth = await patchImage(deploymentId, '4');
    await eventually(
      async () => serverDeployment(name)!.spec.template.spec.containers[0].image,
      (image) => image === IMAGE('4'),
    );
    // Every object of the revision is applied (queue workers last); the pods cannot start.
    await eventually(
      async () =>
        k8s.store.get('Deployment', NS, `${name}-queue`)?.spec.template.metadata.labels['slipway.dev/revision-id'],
      (id) => id === fourth,
    );
    await new Promise((r) => setTimeout(r, 500));
    expect((await revisionOf(deploymentId, fourth)).status).toBe('DEPLOYING');

    await agent.stop('SIGKILL');
    const mark = k8s.requests.length;
    agent = await startService('listener-agent', agentEnv, 60_000);
    await eventually(
      async () => k8s.requests.slice(mark).filter((r) => r.method === 'GET').length,
      (n) => n >= 10,
    );
    k8s.kubelet.release(IMAGE('4'));
    await untilRevision(deploymentId, fourth, 'DEPLOYED');
    servingRevision = fourth;
    // It read the live objects and found them as desired: not one apply, not one delete.
    expect(writesSince(mark)).toEqual([]);
  }, 120_000);

  it('leaves the cluster untouched while the control plane is away for 30 s, then reconnects', async () => {
    const seenBefore = (await http.get(`/v2/listeners/${listenerId}`)).body.last_seen_at;
    await proxy.refuse();
    const mark = k8s.requests.length;
    const before = JSON.stringify(
      objectsOf(deploymentId)
        .filter((o) => o.kind !== 'Pod' && o.kind !== 'ReplicaSet')
        .map((o) => o.metadata.resourceVersion),
    );
    await new Promise((r) => setTimeout(r, 30_000));
    expect(writesSince(mark)).toEqual([]);
    expect(
      JSON.stringify(
        objectsOf(deploymentId)
          .filter((o) => o.kind !== 'Pod' && o.kind !== 'ReplicaSet')
          .map((o) => o.metadata.resourceVersion),
      ),
    ).toBe(before);
    expect(serverDeployment(name)!.status.availableReplicas).toBe(1);
    expect(agent.output()).toMatch(/poll failed; the cluster is left as it is/);

    await proxy.restore();
    await agent.waitFor(/control plane reachable again/, 20_000);
    const seenAfter = await eventually(
      async () => (await http.get(`/v2/listeners/${listenerId}`)).body.last_seen_at,
      (t) => t !== seenBefore,
    );
    expect(Date.parse(seenAfter)).toBeGreaterThan(Date.parse(seenBefore));
    // And it works again: a new revision rolls out.
    const fifth = await patchImage(deploymentId, '5');
    await untilRevision(deploymentId, fifth, 'DEPLOYED');
  }, 90_000);

  it('prunes objects the desired state no longer lists (an HPA at a minimum scale of 0)', async () => {
    const hpas = () => objectsOf(deploymentId).filter((o) => o.kind === 'HorizontalPodAutoscaler');
    expect(hpas().length).toBeGreaterThan(0);
    const mark = k8s.requests.length;
    const res = await http.patch(`/v2/deployments/${deploymentId}`, {
      source_config: { resource_spec: { min_scale: 0, max_scale: 1, queue_min_scale: 0, queue_max_scale: 1 } },
    });
    expect(res.status).toBe(200);
    const stopped = res.body.latest_revision_id as string;
    expect(stopped).not.toBe(servingRevision);
    await untilRevision(deploymentId, stopped, 'DEPLOYED');
    expect(hpas()).toEqual([]);
    const deletes = k8s.requests
      .slice(mark)
      .filter((r) => r.method === 'DELETE')
      .map((r) => r.path);
    expect(deletes.sort()).toEqual([
      `/apis/autoscaling/v2/namespaces/${NS}/horizontalpodautoscalers/${name}`,
      `/apis/autoscaling/v2/namespaces/${NS}/horizontalpodautoscalers/${name}-queue`,
    ]);
    expect(serverDeployment(name)!.spec.replicas).toBe(0);
  });

  it('delete removes every object the agent created, and the deployment disappears', async () => {
    expect(objectsOf(deploymentId).length).toBeGreaterThan(0);
    const res = await http.delete(`/v2/deployments/${deploymentId}`);
    expect(res.status).toBe(204);
    await eventually(
      async () => (await http.get(`/v2/deployments/${deploymentId}`)).status,
      (s) => s === 404,
      30_000,
    );
    expect(objectsOf(deploymentId)).toEqual([]);
    // Owned objects without our labels (ReplicaSets carry the pod labels, so they are covered above) are gone too.
    expect(k8s.store.list('ReplicaSet', NS)).toEqual([]);
    expect(k8s.store.list('Pod', NS)).toEqual([]);
    expect(k8s.store.list('PersistentVolumeClaim', NS)).toEqual([]);
  });
});
