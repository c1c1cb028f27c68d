import { createHash, randomBytes } from 'node:crypto';
import { ObjectStore, typeOfKind, type KubeObject } from './store.js';

/**
 * The simulated kubelet and workload controllers of the Kubernetes API stand-in (server.ts):
 * what a cluster does after an apply, reduced to what a rollout watcher can observe.
 *
 * - Deployment controller: one ReplicaSet per pod template (named by a hash of the template),
 *   scaled to the Deployment's replicas; old ReplicaSets are scaled to 0 only once the new one
 *   is fully ready (maxUnavailable 0), so a broken rollout leaves the old pods serving. Status
 *   carries observedGeneration, replica counts and the `Available` and `Progressing` conditions,
 *   including `ProgressDeadlineExceeded` once progressDeadlineSeconds pass without completion.
 * - ReplicaSet and StatefulSet controllers create and delete pods (StatefulSets also their
 *   volume claims, owned by the StatefulSet when its retention policy deletes them).
 * - The kubelet starts pods after a short delay: `Running` and ready, or waiting with
 *   `ImagePullBackOff` / `CrashLoopBackOff` for images a test marked as failing. A started
 *   container logs a few lines, including (like a careless app) the values of its environment
 *   from Secrets, so log redaction can be tested.
 */

export type ImageFailure = 'ImagePullBackOff' | 'CrashLoopBackOff';

export interface KubeletOptions {
  /** How long a pod takes to start (ms). */
  podStartMs?: number;
  /** Milliseconds that stand for one second of progressDeadlineSeconds (a real second by default). */
  msPerDeadlineSecond?: number;
  tickMs?: number;
}

interface LogLine {
  ts: string;
  container: string;
  text: string;
}

const templateHash = (template: unknown) =>
  createHash('sha256').update(JSON.stringify(template)).digest('hex').slice(0, 10);
const ownerRef = (o: KubeObject) => ({
  apiVersion: o.apiVersion,
  kind: o.kind,
  name: o.metadata.name,
  uid: o.metadata.uid!,
  controller: true,
  blockOwnerDeletion: true,
});
const ownedBy = (o: KubeObject, owner: KubeObject) =>
  (o.metadata.ownerReferences ?? []).some((r) => r.uid === owner.metadata.uid);
const podReady = (p: KubeObject) =>
  p.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True') ?? false;

/** RFC 3339 with nanoseconds, as the kubelet stamps log lines; strictly increasing. */
let lastNanos = 0n;
function nanoTimestamp(): string {
  let nanos = BigInt(Date.now()) * 1_000_000n;
  if (nanos <= lastNanos) nanos = lastNanos + 1n;
  lastNanos = nanos;
  const ms = Number(nanos / 1_000_000n);
  const iso = new Date(ms).toISOString().slice(0, 19);
  return `${iso}.${String(nanos % 1_000_000_000n).padStart(9, '0')}Z`;
}

export class Kubelet {
  private timer: NodeJS.Timeout | undefined;
  private readonly failures = new Map<string, ImageFailure>();
  private readonly held = new Set<string>();
  private readonly podLogs = new Map<string, LogLine[]>();
  private readonly options: Required<KubeletOptions>;

  constructor(
    private readonly store: ObjectStore,
    options: KubeletOptions = {},
  ) {
    this.options = { podStartMs: 150, msPerDeadlineSecond: 1000, tickMs: 50, ...options };
  }

  /** Pods of this image fail to start with `reason` from now on. */
  failImage(image: string, reason: ImageFailure): void {
    this.failures.set(image, reason);
  }

  /** Pods of this image stay Pending (a slow pull) until `release`. */
  holdImage(image: string): void {
    this.held.add(image);
  }

  release(image: string): void {
    this.held.delete(image);
  }

  start(): void {
    this.timer = setInterval(() => {
      try {
        this.tick();
      } catch (err) {
        process.stderr.write(`kube stand-in kubelet: ${String(err)}\n`);
      }
    }, this.options.tickMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One reconciliation pass of every controller. */
  tick(): void {
    for (const d of this.store.list('Deployment')) this.reconcileDeployment(d);
    for (const rs of this.store.list('ReplicaSet'))
      this.reconcilePods(
        rs,
        rs.spec.replicas ?? 1,
        (i) => `${rs.metadata.name}-${randomBytes(3).toString('hex').slice(0, 5)}${i}`,
      );
    for (const s of this.store.list('StatefulSet')) this.reconcileStatefulSet(s);
    for (const p of this.store.list('Pod')) this.runPod(p);
    for (const rs of this.store.list('ReplicaSet')) this.replicaSetStatus(rs);
    for (const d of this.store.list('Deployment')) this.deploymentStatus(d);
  }

  private reconcileDeployment(d: KubeObject): void {
    const hash = templateHash(d.spec.template);
    const name = `${d.metadata.name}-${hash}`;
    const desired = d.spec.replicas ?? 1;
    const owned = this.store.list('ReplicaSet', d.metadata.namespace).filter((rs) => ownedBy(rs, d));
    const current = owned.find((rs) => rs.metadata.name === name);
    const labels = { ...(d.spec.template.metadata?.labels ?? {}), 'pod-template-hash': hash };
    if (!current || current.spec.replicas !== desired) {
      this.store.put(typeOfKind('ReplicaSet')!, {
        apiVersion: 'apps/v1',
        kind: 'ReplicaSet',
        metadata: {
          name,
          namespace: d.metadata.namespace,
          labels,
          ownerReferences: [ownerRef(d)],
          annotations: { 'deployment.kubernetes.io/revision': String(d.metadata.generation) },
        },
        spec: {
          replicas: desired,
          selector: { matchLabels: { ...d.spec.selector.matchLabels, 'pod-template-hash': hash } },
          template: { ...d.spec.template, metadata: { ...d.spec.template.metadata, labels } },
        },
      });
    }
    const newReady = (current?.status?.readyReplicas ?? 0) >= desired;
    for (const old of owned) {
      if (old.metadata.name === name) continue;
      if (newReady && old.spec.replicas !== 0)
        this.store.put(typeOfKind('ReplicaSet')!, { ...old, spec: { ...old.spec, replicas: 0 } });
    }
  }

  private reconcilePods(owner: KubeObject, replicas: number, nameOf: (i: number) => string): void {
    const pods = this.store.list('Pod', owner.metadata.namespace).filter((p) => ownedBy(p, owner));
    for (let i = pods.length; i < replicas; i++) {
      this.store.put(typeOfKind('Pod')!, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: nameOf(i),
          namespace: owner.metadata.namespace,
          labels: owner.spec.template.metadata?.labels ?? {},
          ownerReferences: [ownerRef(owner)],
        },
        spec: owner.spec.template.spec,
        status: { phase: 'Pending', conditions: [{ type: 'Ready', status: 'False' }] },
      });
    }
    for (const extra of pods.slice(replicas)) this.store.delete('Pod', extra.metadata.namespace, extra.metadata.name);
  }

  private reconcileStatefulSet(s: KubeObject): void {
    const replicas = s.spec.replicas ?? 1;
    this.reconcilePods(s, replicas, (i) => `${s.metadata.name}-${i}`);
    const deleteClaims = s.spec.persistentVolumeClaimRetentionPolicy?.whenDeleted === 'Delete';
    for (let i = 0; i < replicas; i++) {
      for (const claim of s.spec.volumeClaimTemplates ?? []) {
        const name = `${claim.metadata.name}-${s.metadata.name}-${i}`;
        if (this.store.get('PersistentVolumeClaim', s.metadata.namespace, name)) continue;
        this.store.put(typeOfKind('PersistentVolumeClaim')!, {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: {
            name,
            namespace: s.metadata.namespace,
            labels: s.spec.selector.matchLabels,
            ...(deleteClaims ? { ownerReferences: [ownerRef(s)] } : {}),
          },
          spec: claim.spec,
          status: { phase: 'Bound' },
        });
      }
    }
    const pods = this.store.list('Pod', s.metadata.namespace).filter((p) => ownedBy(p, s));
    const ready = pods.filter(podReady).length;
    this.store.putStatus('StatefulSet', s.metadata.namespace, s.metadata.name, {
      observedGeneration: s.metadata.generation,
      replicas: pods.length,
      readyReplicas: ready,
      availableReplicas: ready,
      currentReplicas: pods.length,
      updatedReplicas: pods.length,
    });
  }

  /** The kubelet: starts a pending pod once its start delay passed. */
  private runPod(p: KubeObject): void {
    if (p.status?.phase !== 'Pending' || p.status?.containerStatuses) {
      return;
    }
    if (Date.now() - Date.parse(p.metadata.creationTimestamp!) < this.options.podStartMs) return;
    const containers: any[] = p.spec.containers ?? [];
    if (containers.some((c) => this.held.has(c.image))) return;
    const failing = containers.map((c) => [c, this.failures.get(c.image)] as const).find(([, f]) => f);
    const key = ObjectStore.key('Pod', p.metadata.namespace, p.metadata.name);
    if (failing) {
      const [container, reason] = failing;
      const message =
        reason === 'ImagePullBackOff'
          ? `Back-off pulling image "${container.image}": ErrImagePull: failed to pull and unpack image "${container.image}": not found`
          : `back-off 10s restarting failed container=${container.name} pod=${p.metadata.name}`;
      if (reason === 'CrashLoopBackOff')
        this.podLogs.set(key, [
          { ts: nanoTimestamp(), container: container.name, text: 'fatal: the server exited during startup' },
        ]);
      this.store.putStatus('Pod', p.metadata.namespace, p.metadata.name, {
        phase: reason === 'CrashLoopBackOff' ? 'Running' : 'Pending',
        conditions: [{ type: 'Ready', status: 'False', reason: 'ContainersNotReady' }],
        containerStatuses: containers.map((c) => ({
          name: c.name,
          image: c.image,
          ready: false,
          restartCount: reason === 'CrashLoopBackOff' && c === container ? 3 : 0,
          state:
            c === container ? { waiting: { reason, message } } : { running: { startedAt: new Date().toISOString() } },
        })),
      });
      return;
    }
    const lines: LogLine[] = [];
    for (const c of containers) {
      lines.push({ ts: nanoTimestamp(), container: c.name, text: `starting ${c.image}` });
      for (const value of this.environmentFromSecrets(p, c))
        lines.push({ ts: nanoTimestamp(), container: c.name, text: `loaded setting ${value}` });
      lines.push({ ts: nanoTimestamp(), container: c.name, text: 'ready to serve' });
    }
    this.podLogs.set(key, lines);
    this.store.putStatus('Pod', p.metadata.namespace, p.metadata.name, {
      phase: 'Running',
      podIP: '10.0.0.1',
      conditions: [{ type: 'Ready', status: 'True' }],
      containerStatuses: containers.map((c) => ({
        name: c.name,
        image: c.image,
        ready: true,
        restartCount: 0,
        state: { running: { startedAt: new Date().toISOString() } },
      })),
    });
  }

  /** `NAME=value` for every key of every Secret a container takes its environment from. */
  private environmentFromSecrets(p: KubeObject, c: any): string[] {
    const out: string[] = [];
    for (const from of c.envFrom ?? []) {
      const secret = from.secretRef && this.store.get('Secret', p.metadata.namespace, from.secretRef.name);
      const values: Record<string, string> = {
        ...(secret?.stringData as object),
        ...Object.fromEntries(
          Object.entries((secret?.data as object) ?? {}).map(([k, v]) => [
            k,
            Buffer.from(String(v), 'base64').toString(),
          ]),
        ),
      };
      for (const [k, v] of Object.entries(values)) out.push(`${k}=${v}`);
    }
    return out;
  }

  private replicaSetStatus(rs: KubeObject): void {
    const pods = this.store.list('Pod', rs.metadata.namespace).filter((p) => ownedBy(p, rs));
    const ready = pods.filter(podReady).length;
    this.store.putStatus('ReplicaSet', rs.metadata.namespace, rs.metadata.name, {
      observedGeneration: rs.metadata.generation,
      replicas: pods.length,
      readyReplicas: ready,
      availableReplicas: ready,
    });
  }

  private deploymentStatus(d: KubeObject): void {
    const hash = templateHash(d.spec.template);
    const desired = d.spec.replicas ?? 1;
    const owned = this.store.list('ReplicaSet', d.metadata.namespace).filter((rs) => ownedBy(rs, d));
    const current = owned.find((rs) => rs.metadata.name === `${d.metadata.name}-${hash}`);
    if (!current) return;
    const sum = (f: (rs: KubeObject) => number) => owned.reduce((n, rs) => n + f(rs), 0);
    const available = sum((rs) => rs.status?.availableReplicas ?? 0);
    const updated = current.status?.replicas ?? 0;
    const newReady = current.status?.readyReplicas ?? 0;
    const oldLeft = sum((rs) => (rs === current ? 0 : (rs.status?.replicas ?? 0)));
    const complete = newReady >= desired && oldLeft === 0;
    const previous = (d.status?.conditions ?? []).find((c: any) => c.type === 'Progressing');
    const now = new Date().toISOString();
    // Progress restarts with each new ReplicaSet (a new template), as in the real controller.
    const startedAt = previous?.replicaSet === current.metadata.name ? previous.startedAt : now;
    const deadlineMs = (d.spec.progressDeadlineSeconds ?? 600) * this.options.msPerDeadlineSecond;
    let progressing: Record<string, string>;
    if (complete) {
      progressing = {
        status: 'True',
        reason: 'NewReplicaSetAvailable',
        message: `ReplicaSet "${current.metadata.name}" has successfully progressed.`,
      };
    } else if (Date.now() - Date.parse(startedAt) > deadlineMs) {
      progressing = {
        status: 'False',
        reason: 'ProgressDeadlineExceeded',
        message: `ReplicaSet "${current.metadata.name}" has timed out progressing.`,
      };
    } else {
      progressing = {
        status: 'True',
        reason: 'ReplicaSetUpdated',
        message: `ReplicaSet "${current.metadata.name}" is progressing.`,
      };
    }
    const keep =
      previous &&
      previous.status === progressing.status &&
      previous.reason === progressing.reason &&
      previous.replicaSet === current.metadata.name;
    this.store.putStatus('Deployment', d.metadata.namespace, d.metadata.name, {
      observedGeneration: d.metadata.generation,
      replicas: sum((rs) => rs.status?.replicas ?? 0),
      updatedReplicas: updated,
      readyReplicas: sum((rs) => rs.status?.readyReplicas ?? 0),
      availableReplicas: available,
      unavailableReplicas: Math.max(0, desired - available),
      conditions: [
        available >= desired
          ? {
              type: 'Available',
              status: 'True',
              reason: 'MinimumReplicasAvailable',
              message: 'Deployment has minimum availability.',
            }
          : {
              type: 'Available',
              status: 'False',
              reason: 'MinimumReplicasUnavailable',
              message: 'Deployment does not have minimum availability.',
            },
        // `replicaSet` and `startedAt` are bookkeeping of this stand-in; real conditions carry
        // lastUpdateTime/lastTransitionTime instead.
        {
          type: 'Progressing',
          ...progressing,
          lastUpdateTime: keep ? previous.lastUpdateTime : now,
          replicaSet: current.metadata.name,
          startedAt,
        },
      ],
    });
  }

  /** A pod's log as `GET …/log` returns it; null while the container has not started. */
  logs(
    pod: KubeObject,
    {
      container,
      sinceTime,
      sinceSeconds,
      timestamps,
    }: { container?: string; sinceTime?: string; sinceSeconds?: number; timestamps: boolean },
  ): string | null {
    const name = container ?? pod.spec.containers?.[0]?.name;
    const lines = this.podLogs.get(ObjectStore.key('Pod', pod.metadata.namespace, pod.metadata.name));
    if (!lines) return null;
    // The API server reads sinceTime with second precision, so lines of that second come again.
    const since = sinceTime
      ? Math.floor(Date.parse(sinceTime) / 1000) * 1000
      : sinceSeconds
        ? Date.now() - sinceSeconds * 1000
        : null;
    return lines
      .filter((l) => l.container === name && (since === null || Date.parse(l.ts) >= since))
      .map((l) => (timestamps ? `${l.ts} ${l.text}\n` : `${l.text}\n`))
      .join('');
  }
}
