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

/*
 * Every case works in a namespace of its own and sets up what it needs, so each passes alone
 * (`-t`) and in any order: nothing carries over from one case to the next.
 */
let namespaces = 0;
const freshNamespace = () => `team-${++namespaces}`;

const deployment = (ns: string, image: string, replicas = 1): V1Deployment => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: ns, labels: { app: 'web', tier: 'api', 'app.kubernetes.io/name': 'web' } },
  spec: {
    replicas,
    selector: { matchLabels: { app: 'web' } },
    template: {
      metadata: { labels: { app: 'web' } },
      spec: { containers: [{ name: 'server', image, envFrom: [{ secretRef: { name: 'web-env' } }] }] },
    },
  },
});
const secret = (ns: string) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'web-env', namespace: ns },
  stringData: { TOKEN: 'tok-123456' },
});
const apply = (obj: any, manager = 'slipway', force = true) =>
  objects.patch(obj, undefined, undefined, manager, force, PatchStrategy.ServerSideApply);
const readDeployment = (ns: string) =>
  objects.read({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: ns },
  }) as Promise<V1Deployment>;
const rolledOut = (d: V1Deployment) =>
  d.status?.conditions?.some((c) => c.type === 'Progressing' && c.reason === 'NewReplicaSetAvailable') ?? false;

beforeAll(async () => {
  k8s = await startKubeStandIn({ podStartMs: 50, msPerDeadlineSecond: 2 });
  const kc = new KubeConfig();
  kc.loadFromString(k8s.kubeconfig());
  objects = KubernetesObjectApi.makeApiClient(kc);
  core = kc.makeApiClient(CoreV1Api);
});
afterAll(async () => {
  await k8s?.close();
});

describe('Kubernetes API stand-in', () => {
  it('applies server-side: created, then a no-op keeps resourceVersion, a change bumps generation', async () => {
    const ns = freshNamespace();
    const secretFirst = await apply(secret(ns));
    // A status write by the simulated controllers bumps resourceVersion too (as on a real
    // cluster), so the Deployment's no-op is checked with the controllers paused; nothing but
    // apply ever writes the Secret.
    k8s.kubelet.stop();
    try {
      const first = await apply(deployment(ns, 'img:1'));
      const again = await apply(deployment(ns, 'img:1'));
      expect(again.metadata!.resourceVersion).toBe(first.metadata!.resourceVersion);
      expect(again.metadata!.generation).toBe(first.metadata!.generation);
      const changed = await apply(deployment(ns, 'img:1', 2));
      expect(changed.metadata!.generation).toBe(first.metadata!.generation! + 1);
      expect(Number(changed.metadata!.resourceVersion)).toBeGreaterThan(Number(first.metadata!.resourceVersion));
    } finally {
      k8s.kubelet.start();
    }
    expect((await apply(secret(ns))).metadata!.resourceVersion).toBe(secretFirst.metadata!.resourceVersion);
    const patches = k8s.requests.filter((r) => r.method === 'PATCH' && r.path.includes(`/namespaces/${ns}/`));
    expect(patches).toHaveLength(5);
    expect(patches.every((r) => r.contentType === 'application/apply-patch+yaml' && r.fieldManager === 'slipway')).toBe(
      true,
    );
  });

  it('refuses a conflicting apply of another manager unless forced', async () => {
    const ns = freshNamespace();
    await apply(deployment(ns, 'img:1', 2));
    await expect(apply(deployment(ns, 'img:1', 5), 'someone-else', false)).rejects.toMatchObject({ code: 409 });
    expect((await readDeployment(ns)).spec!.replicas).toBe(2);
    // The same value is no conflict: both managers then own the field.
    await apply(deployment(ns, 'img:1', 2), 'someone-else', false);
    await apply(deployment(ns, 'img:1', 5), 'someone-else', true);
    expect((await readDeployment(ns)).spec!.replicas).toBe(5);
    // Forcing took the field from slipway, so slipway now conflicts until it forces it back.
    await expect(apply(deployment(ns, 'img:1', 2), 'slipway', false)).rejects.toMatchObject({ code: 409 });
    await apply(deployment(ns, 'img:1', 2), 'slipway', true);
    expect((await readDeployment(ns)).spec!.replicas).toBe(2);
  });

  it('rolls a Deployment out, reports ImagePullBackOff on pods and keeps the old ReplicaSet serving', async () => {
    const ns = freshNamespace();
    await apply(secret(ns));
    await apply(deployment(ns, 'img:1', 2));
    const done = await eventually(() => readDeployment(ns), rolledOut);
    expect(done.status).toMatchObject({
      readyReplicas: 2,
      updatedReplicas: 2,
      observedGeneration: done.metadata!.generation,
    });
    const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: 'app=web' });
    expect(pods.items).toHaveLength(2);
    const log = await core.readNamespacedPodLog({
      namespace: ns,
      name: pods.items[0]!.metadata!.name!,
      container: 'server',
      timestamps: true,
    });
    expect(log).toMatch(/^\S+Z starting img:1\n/);
    expect(log).toContain('TOKEN=tok-123456');

    k8s.kubelet.failImage('img:broken', 'ImagePullBackOff');
    await apply(deployment(ns, 'img:broken', 2));
    const failing = await eventually(
      () => core.listNamespacedPod({ namespace: ns, labelSelector: 'app=web' }),
      (l) => l.items.some((p) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ImagePullBackOff'),
    );
    expect(
      failing.items.filter((p) => p.status?.containerStatuses?.[0]?.ready).map((p) => p.spec!.containers[0]!.image),
    ).toEqual(['img:1', 'img:1']);
    const stuck = await eventually(
      () => readDeployment(ns),
      (d) => d.status?.conditions?.some((c) => c.reason === 'ProgressDeadlineExceeded') ?? false,
    );
    expect(stuck.status!.availableReplicas).toBe(2);
  });

  it('lists by label selector and deletes with propagation to dependents', async () => {
    const ns = freshNamespace();
    await apply(secret(ns));
    await apply(deployment(ns, 'img:1', 1));
    await eventually(() => readDeployment(ns), rolledOut);
    const inNs = () => k8s.store.all().filter((o) => o.metadata.namespace === ns);
    expect(
      inNs()
        .map((o) => o.kind)
        .sort(),
    ).toEqual(['Deployment', 'Pod', 'ReplicaSet', 'Secret']);
    expect(
      (
        await objects.list(
          'apps/v1',
          'Deployment',
          ns,
          undefined,
          undefined,
          undefined,
          undefined,
          'app=web,tier in (api)',
        )
      ).items,
    ).toHaveLength(1);
    expect(
      (await objects.list('apps/v1', 'Deployment', ns, undefined, undefined, undefined, undefined, 'app=web,tier!=api'))
        .items,
    ).toHaveLength(0);
    expect(
      (
        await objects.list(
          'apps/v1',
          'Deployment',
          ns,
          undefined,
          undefined,
          undefined,
          undefined,
          'app.kubernetes.io/name=web',
        )
      ).items,
    ).toHaveLength(1);
    await objects.delete(
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: ns } },
      undefined,
      undefined,
      undefined,
      undefined,
      'Background',
    );
    await expect(readDeployment(ns)).rejects.toMatchObject({ code: 404 });
    expect(inNs().map((o) => o.kind)).toEqual(['Secret']);
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
