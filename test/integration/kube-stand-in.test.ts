import { CoreV1Api, KubeConfig, KubernetesObjectApi, PatchStrategy, type V1Deployment } from '@kubernetes/client-node';
import https from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/service-process.js';
import { startKubeStandIn, type KubeStandIn } from '../support/kube-stand-in/server.js';

/**
 * The protocol-level Kubernetes API stand-in (test/support/kube-stand-in; no kube-apiserver is
 * installable here) driven by the official client, @kubernetes/client-node: the behaviours the
 * listener agent's tests rely on must be the ones a real API server has.
 */

let k8s: KubeStandIn;
let objects: KubernetesObjectApi;
let core: CoreV1Api;
const NS = 'team-a';

const deployment = (image: string, replicas = 1): V1Deployment => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: NS, labels: { app: 'web', tier: 'api', 'app.kubernetes.io/name': 'web' } },
  spec: {
    replicas,
    selector: { matchLabels: { app: 'web' } },
    template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'server', image, envFrom: [{ secretRef: { name: 'web-env' } }] }] } },
  },
});
const ref = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: NS } };
const apply = (obj: any, manager = 'slipway', force = true) => objects.patch(obj, undefined, undefined, manager, force, PatchStrategy.ServerSideApply);
const readDeployment = () => objects.read(ref) as Promise<V1Deployment>;

beforeAll(async () => {
  k8s = await startKubeStandIn({ podStartMs: 50, msPerDeadlineSecond: 2 });
  const kc = new KubeConfig();
  kc.loadFromString(k8s.kubeconfig(NS));
  objects = KubernetesObjectApi.makeApiClient(kc);
  core = kc.makeApiClient(CoreV1Api);
});
afterAll(async () => {
  await k8s?.close();
});

describe('Kubernetes API stand-in', () => {
  it('applies server-side: created, then a no-op keeps resourceVersion, a change bumps generation', async () => {
    await apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'web-env', namespace: NS }, stringData: { TOKEN: 'tok-123456' } });
    const first = await apply(deployment('img:1'));
    const again = await apply(deployment('img:1'));
    expect(again.metadata!.resourceVersion).toBe(first.metadata!.resourceVersion);
    const changed = await apply(deployment('img:1', 2));
    expect(changed.metadata!.generation).toBe(first.metadata!.generation! + 1);
    expect(k8s.requests.filter((r) => r.method === 'PATCH').every((r) => r.contentType === 'application/apply-patch+yaml' && r.fieldManager === 'slipway')).toBe(true);
  });

  it('refuses a conflicting apply of another manager unless forced', async () => {
    await expect(apply(deployment('img:1', 5), 'someone-else', false)).rejects.toMatchObject({ code: 409 });
    expect((await readDeployment()).spec!.replicas).toBe(2);
    await apply(deployment('img:1', 5), 'someone-else', true);
    expect((await readDeployment()).spec!.replicas).toBe(5);
    await apply(deployment('img:1', 2), 'slipway', true);
  });

  it('rolls a Deployment out, reports ImagePullBackOff on pods and keeps the old ReplicaSet serving', async () => {
    const done = await eventually(readDeployment, (d) => d.status?.conditions?.some((c) => c.type === 'Progressing' && c.reason === 'NewReplicaSetAvailable') ?? false);
    expect(done.status).toMatchObject({ readyReplicas: 2, updatedReplicas: 2, observedGeneration: done.metadata!.generation });
    const pods = await core.listNamespacedPod({ namespace: NS, labelSelector: 'app=web' });
    const log = await core.readNamespacedPodLog({ namespace: NS, name: pods.items[0]!.metadata!.name!, container: 'server', timestamps: true });
    expect(log).toMatch(/^\S+Z starting img:1\n/);
    expect(log).toContain('TOKEN=tok-123456');

    k8s.kubelet.failImage('img:broken', 'ImagePullBackOff');
    await apply(deployment('img:broken', 2));
    const failing = await eventually(
      () => core.listNamespacedPod({ namespace: NS, labelSelector: 'app=web' }),
      (l) => l.items.some((p) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ImagePullBackOff'),
    );
    expect(failing.items.filter((p) => p.status?.containerStatuses?.[0]?.ready)).toHaveLength(2);
    const stuck = await eventually(readDeployment, (d) => d.status?.conditions?.some((c) => c.reason === 'ProgressDeadlineExceeded') ?? false);
    expect(stuck.status!.availableReplicas).toBe(2);
  });

  it('lists by label selector and deletes with propagation to dependents', async () => {
    expect((await objects.list('apps/v1', 'Deployment', NS, undefined, undefined, undefined, undefined, 'app=web,tier in (api)')).items).toHaveLength(1);
    expect((await objects.list('apps/v1', 'Deployment', NS, undefined, undefined, undefined, undefined, 'app=web,tier!=api')).items).toHaveLength(0);
    expect((await objects.list('apps/v1', 'Deployment', NS, undefined, undefined, undefined, undefined, 'app.kubernetes.io/name=web')).items).toHaveLength(1);
    await objects.delete(ref, undefined, undefined, undefined, undefined, 'Background');
    await expect(readDeployment()).rejects.toMatchObject({ code: 404 });
    expect(k8s.store.all().map((o) => o.kind)).toEqual(['Secret']);
  });

  it('requires the bearer token', async () => {
    const statusOf = (headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const ca = Buffer.from(/certificate-authority-data: (\S+)/.exec(k8s.kubeconfig())![1]!, 'base64');
        https.get(`${k8s.url}/api/v1`, { ca, headers }, (res) => resolve(res.statusCode!)).on('error', reject);
      });
    expect(await statusOf({})).toBe(401);
    expect(await statusOf({ authorization: 'Bearer wrong' })).toBe(401);
    expect(await statusOf({ authorization: `Bearer ${k8s.token}` })).toBe(200);
  });
});
