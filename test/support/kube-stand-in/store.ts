import { randomUUID } from 'node:crypto';

/**
 * The object store of the Kubernetes API stand-in (see server.ts): objects by resource,
 * namespace and name, with resourceVersion, generation, uid, managed fields and label
 * selection, the way kube-apiserver keeps them in etcd.
 */

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }>;
    managedFields?: Array<{
      manager: string;
      operation: string;
      apiVersion: string;
      time: string;
      fieldsType: string;
      fieldsV1: object;
    }>;
    [key: string]: unknown;
  };
  spec?: any;
  status?: any;
  [key: string]: unknown;
}

/** One resource the stand-in serves, as discovery lists it. */
export interface ResourceType {
  group: string;
  version: string;
  kind: string;
  /** Plural, lower case: the URL segment. */
  name: string;
  /** Whether spec changes bump metadata.generation (workloads), as for the real types. */
  generational: boolean;
  hasStatus: boolean;
}

export const RESOURCE_TYPES: readonly ResourceType[] = [
  { group: '', version: 'v1', kind: 'Secret', name: 'secrets', generational: false, hasStatus: false },
  { group: '', version: 'v1', kind: 'ConfigMap', name: 'configmaps', generational: false, hasStatus: false },
  { group: '', version: 'v1', kind: 'ServiceAccount', name: 'serviceaccounts', generational: false, hasStatus: false },
  { group: '', version: 'v1', kind: 'Service', name: 'services', generational: false, hasStatus: true },
  { group: '', version: 'v1', kind: 'Pod', name: 'pods', generational: false, hasStatus: true },
  {
    group: '',
    version: 'v1',
    kind: 'PersistentVolumeClaim',
    name: 'persistentvolumeclaims',
    generational: false,
    hasStatus: true,
  },
  { group: 'apps', version: 'v1', kind: 'Deployment', name: 'deployments', generational: true, hasStatus: true },
  { group: 'apps', version: 'v1', kind: 'ReplicaSet', name: 'replicasets', generational: true, hasStatus: true },
  { group: 'apps', version: 'v1', kind: 'StatefulSet', name: 'statefulsets', generational: true, hasStatus: true },
  {
    group: 'autoscaling',
    version: 'v2',
    kind: 'HorizontalPodAutoscaler',
    name: 'horizontalpodautoscalers',
    generational: true,
    hasStatus: true,
  },
  {
    group: 'networking.k8s.io',
    version: 'v1',
    kind: 'Ingress',
    name: 'ingresses',
    generational: true,
    hasStatus: true,
  },
];

export const apiVersionOf = (t: ResourceType) => (t.group ? `${t.group}/${t.version}` : t.version);
export const typeOfKind = (kind: string) => RESOURCE_TYPES.find((t) => t.kind === kind);

const describeConflict = (c: { field: string; manager: string }) =>
  `conflict with "${c.manager}": .${JSON.parse(c.field).join('.')}`;

export class ConflictError extends Error {
  constructor(readonly conflicts: Array<{ field: string; manager: string }>) {
    super(
      `Apply failed with ${conflicts.length} conflict${conflicts.length === 1 ? '' : 's'}: ` +
        conflicts.map(describeConflict).join('; '),
    );
  }
}

type Ownership = Map<string, Set<string>>;

/**
 * Leaf paths of a JSON value, each a JSON-encoded array of keys (label keys hold dots and
 * slashes); arrays count as one (atomic) leaf, as for lists without merge keys.
 */
function leaves(value: unknown, prefix: string[] = []): Map<string, unknown> {
  const out = new Map<string, unknown>();
  if (value && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length) {
    for (const [k, v] of Object.entries(value)) for (const [p, leaf] of leaves(v, [...prefix, k])) out.set(p, leaf);
  } else if (prefix.length) {
    out.set(JSON.stringify(prefix), value);
  }
  return out;
}

function setPath(target: any, path: string, value: unknown): void {
  const parts: string[] = JSON.parse(path);
  let node = target;
  for (const part of parts.slice(0, -1)) {
    if (!node[part] || typeof node[part] !== 'object' || Array.isArray(node[part])) node[part] = {};
    node = node[part];
  }
  node[parts.at(-1)!] = structuredClone(value);
}

function deletePath(target: any, path: string): void {
  const parts: string[] = JSON.parse(path);
  const stack: any[] = [target];
  let node = target;
  for (const part of parts.slice(0, -1)) {
    node = node?.[part];
    if (!node || typeof node !== 'object') return;
    stack.push(node);
  }
  delete node[parts.at(-1)!];
  // Drop maps the removal left empty, as the apiserver does for fields nobody owns.
  for (let i = parts.length - 2; i >= 0; i--) {
    const parent = stack[i];
    const child = parent[parts[i]!];
    if (child && typeof child === 'object' && !Array.isArray(child) && !Object.keys(child).length)
      delete parent[parts[i]!];
    else break;
  }
}

const SYSTEM_METADATA = [
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'managedFields',
];

/** The parts of an object a manager can own through apply (not status, not system metadata). */
function appliable(obj: any): object {
  const { status: _status, metadata = {}, ...rest } = obj;
  const meta = Object.fromEntries(Object.entries(metadata).filter(([k]) => !SYSTEM_METADATA.includes(k)));
  return { ...rest, metadata: meta };
}

export interface Event {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: KubeObject;
}

export class ObjectStore {
  private readonly objects = new Map<string, KubeObject>();
  /** Per object key: manager → field paths it owns. */
  private readonly owners = new Map<string, Ownership>();
  private version = 1;
  private readonly listeners = new Set<(e: Event) => void>();

  static key(kind: string, namespace: string | undefined, name: string): string {
    return `${kind}/${namespace ?? ''}/${name}`;
  }

  get resourceVersion(): string {
    return String(this.version);
  }

  onChange(fn: (e: Event) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private emit(type: Event['type'], object: KubeObject): void {
    for (const fn of this.listeners) fn({ type, object: structuredClone(object) });
  }

  get(kind: string, namespace: string | undefined, name: string): KubeObject | undefined {
    const o = this.objects.get(ObjectStore.key(kind, namespace, name));
    return o && structuredClone(o);
  }

  list(kind: string, namespace?: string, selector?: string): KubeObject[] {
    const match = selectorMatcher(selector);
    return [...this.objects.values()]
      .filter(
        (o) =>
          o.kind === kind &&
          (namespace === undefined || o.metadata.namespace === namespace) &&
          match(o.metadata.labels ?? {}),
      )
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
      .map((o) => structuredClone(o));
  }

  all(): KubeObject[] {
    return [...this.objects.values()].map((o) => structuredClone(o));
  }

  /**
   * Server-side apply: the manager's fields become exactly those of the patch. A field another
   * manager owns with a different value is a conflict unless `force` takes it over; a field
   * this manager owned before and no longer sends is removed (if nobody else owns it). An apply
   * that changes nothing leaves resourceVersion as it was.
   */
  apply(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    patch: KubeObject,
    manager: string,
    force: boolean,
  ): { object: KubeObject; created: boolean } {
    const key = ObjectStore.key(type.kind, namespace, name);
    const current = this.objects.get(key);
    const owners: Ownership = this.owners.get(key) ?? new Map();
    const wanted = leaves(appliable(patch));
    const existing = current ? leaves(appliable(current)) : new Map<string, unknown>();

    const conflicts: Array<{ field: string; manager: string }> = [];
    for (const [path, value] of wanted) {
      if (!existing.has(path) || JSON.stringify(existing.get(path)) === JSON.stringify(value)) continue;
      for (const [other, fields] of owners)
        if (other !== manager && fields.has(path)) conflicts.push({ field: path, manager: other });
    }
    if (conflicts.length && !force) throw new ConflictError(conflicts);

    const next: any = current
      ? structuredClone(current)
      : { apiVersion: apiVersionOf(type), kind: type.kind, metadata: { name, ...(namespace ? { namespace } : {}) } };
    for (const path of owners.get(manager) ?? []) {
      const ownedElsewhere = [...owners].some(([m, f]) => m !== manager && f.has(path));
      if (!wanted.has(path) && !ownedElsewhere) deletePath(next, path);
    }
    for (const [path, value] of wanted) setPath(next, path, value);
    if (force) for (const c of conflicts) owners.get(c.manager)?.delete(c.field);
    owners.set(manager, new Set(wanted.keys()));
    this.owners.set(key, owners);

    if (current && JSON.stringify(appliable(current)) === JSON.stringify(appliable(next)))
      return { object: structuredClone(current), created: false };
    const specChanged = !current || JSON.stringify(current.spec) !== JSON.stringify(next.spec);
    next.metadata.managedFields = [...owners.keys()].map((m) => ({
      manager: m,
      operation: 'Apply',
      apiVersion: apiVersionOf(type),
      time: new Date().toISOString(),
      fieldsType: 'FieldsV1',
      fieldsV1: {},
    }));
    return { object: this.write(type, next, { bumpGeneration: type.generational && specChanged }), created: !current };
  }

  /** A write by a controller (not apply): creates or replaces the whole object. */
  put(type: ResourceType, obj: KubeObject): KubeObject {
    const current = this.objects.get(ObjectStore.key(type.kind, obj.metadata.namespace, obj.metadata.name));
    const next = structuredClone(obj);
    if (current) next.metadata = { ...current.metadata, ...next.metadata, uid: current.metadata.uid };
    const specChanged = !current || JSON.stringify(current.spec) !== JSON.stringify(next.spec);
    return this.write(type, next, { bumpGeneration: type.generational && specChanged });
  }

  /** The status subresource: replaces status only, never generation. */
  putStatus(kind: string, namespace: string | undefined, name: string, status: unknown): KubeObject | undefined {
    const key = ObjectStore.key(kind, namespace, name);
    const current = this.objects.get(key);
    if (!current) return undefined;
    if (JSON.stringify(current.status) === JSON.stringify(status)) return structuredClone(current);
    const next = { ...structuredClone(current), status: structuredClone(status) };
    next.metadata.resourceVersion = String(++this.version);
    this.objects.set(key, next);
    this.emit('MODIFIED', next);
    return structuredClone(next);
  }

  private write(type: ResourceType, next: KubeObject, { bumpGeneration }: { bumpGeneration: boolean }): KubeObject {
    const key = ObjectStore.key(type.kind, next.metadata.namespace, next.metadata.name);
    const current = this.objects.get(key);
    next.metadata.uid ??= current?.metadata.uid ?? randomUUID();
    next.metadata.creationTimestamp ??= current?.metadata.creationTimestamp ?? new Date().toISOString();
    if (type.generational) next.metadata.generation = (current?.metadata.generation ?? 0) + (bumpGeneration ? 1 : 0);
    next.metadata.resourceVersion = String(++this.version);
    this.objects.set(key, next);
    this.emit(current ? 'MODIFIED' : 'ADDED', next);
    return structuredClone(next);
  }

  /**
   * Deletes an object. `Background` and `Foreground` also delete its dependents (objects whose
   * ownerReferences name its uid), recursively; `Orphan` leaves them, dropping the reference.
   * The garbage collector of a real cluster does this asynchronously; here it is immediate.
   */
  delete(
    kind: string,
    namespace: string | undefined,
    name: string,
    propagationPolicy = 'Background',
  ): KubeObject | undefined {
    const key = ObjectStore.key(kind, namespace, name);
    const current = this.objects.get(key);
    if (!current) return undefined;
    this.objects.delete(key);
    this.owners.delete(key);
    this.version++;
    for (const dependent of [...this.objects.values()]) {
      const refs = dependent.metadata.ownerReferences ?? [];
      if (!refs.some((r) => r.uid === current.metadata.uid)) continue;
      if (propagationPolicy === 'Orphan') {
        dependent.metadata.ownerReferences = refs.filter((r) => r.uid !== current.metadata.uid);
      } else {
        this.delete(dependent.kind, dependent.metadata.namespace, dependent.metadata.name, propagationPolicy);
      }
    }
    this.emit('DELETED', current);
    return structuredClone(current);
  }
}

/**
 * Equality-based and existence label selectors (`a=b,c==d,e!=f,g,!h`) and set-based `in`/`notin`,
 * the subset of the label selector grammar clients send.
 */
export function selectorMatcher(selector: string | undefined): (labels: Record<string, string>) => boolean {
  if (!selector) return () => true;
  const terms =
    selector
      .match(/([^,(]+(\([^)]*\))?)/g)
      ?.map((t) => t.trim())
      .filter(Boolean) ?? [];
  const tests = terms.map((term): ((l: Record<string, string>) => boolean) => {
    let m = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
    if (m) {
      const values = m[3]!.split(',').map((v) => v.trim());
      const [, key, op] = m;
      return op === 'in' ? (l) => values.includes(l[key!]!) : (l) => !values.includes(l[key!]!);
    }
    m = /^([^!=]+)(!=|==|=)(.*)$/.exec(term);
    if (m) {
      const [, key, op, value] = m;
      return op === '!=' ? (l) => l[key!.trim()] !== value!.trim() : (l) => l[key!.trim()] === value!.trim();
    }
    if (term.startsWith('!')) return (l) => !(term.slice(1) in l);
    return (l) => term in l;
  });
  return (labels) => tests.every((t) => t(labels));
}
