/**
 * A PROTOCOL-LEVEL STAND-IN for the Kubernetes API server, for tests only.
 *
 * No kube-apiserver can be installed on these machines (Debian ships kubectl as
 * `kubernetes-client`, but no API server; `apt-cache search kube` lists none), so tests of the
 * listener agent talk to this local HTTP server instead. It implements exactly the REST subset
 * the agent uses, with the real paths, verbs, content types and status codes:
 *
 * - discovery (`/api/v1`, `/apis/<group>/<version>`: APIResourceList), which
 *   `KubernetesObjectApi` reads to map kinds to URLs;
 * - server-side apply (`PATCH` with `application/apply-patch+yaml`, `fieldManager` required,
 *   `force`), with field ownership, conflicts (409) and no-op applies that keep resourceVersion;
 * - get, list with label selectors, and watch (`?watch=true`, newline-delimited events);
 * - delete with `propagationPolicy` (dependents found by ownerReferences);
 * - the status subresource (`GET`/`PUT`/merge-`PATCH` `…/status`);
 * - pod logs (`GET …/pods/<name>/log` with `container`, `sinceTime`, `timestamps`);
 * - TLS with its own self-signed certificate (handed to clients in the kubeconfig, as a
 *   cluster's CA is) and bearer-token authentication (401 without the token).
 *
 * A simulated kubelet and controllers (kubelet.ts) move Deployment, ReplicaSet, StatefulSet and
 * pod status the way a cluster does. Every request is recorded so tests can assert what a client
 * did (e.g. that nothing was re-applied). The agent under test is configured with a kubeconfig
 * pointing here and does not know it is not a real cluster.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import {
  ConflictError,
  ObjectStore,
  RESOURCE_TYPES,
  selectorMatcher,
  type KubeObject,
  type ResourceType,
} from './store.js';
import { Kubelet, type KubeletOptions } from './kubelet.js';

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string | undefined;
  /** Field manager of an apply, if any. */
  fieldManager?: string;
  at: number;
}

export interface KubeStandIn {
  url: string;
  token: string;
  store: ObjectStore;
  kubelet: Kubelet;
  requests: RecordedRequest[];
  /** A kubeconfig (YAML) that points a client at this server with its token. */
  kubeconfig(namespace?: string): string;
  close(): Promise<void>;
}

const status = (code: number, reason: string, message: string, details?: object) => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: code < 400 ? 'Success' : 'Failure',
  message,
  reason,
  ...(details ? { details } : {}),
  code,
});

function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function discovery(group: string, version: string) {
  const types = RESOURCE_TYPES.filter((t) => t.group === group && t.version === version);
  if (!types.length) return null;
  const resources = types.flatMap((t) => [
    {
      name: t.name,
      singularName: t.kind.toLowerCase(),
      namespaced: true,
      kind: t.kind,
      verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
    },
    ...(t.hasStatus
      ? [
          {
            name: `${t.name}/status`,
            singularName: '',
            namespaced: true,
            kind: t.kind,
            verbs: ['get', 'patch', 'update'],
          },
        ]
      : []),
    ...(t.kind === 'Pod'
      ? [{ name: 'pods/log', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get'] }]
      : []),
  ]);
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: group ? `${group}/${version}` : version,
    resources,
  };
}

/** `/api/v1/...` or `/apis/<group>/<version>/...` → group, version and the rest of the segments. */
function parsePath(pathname: string): { group: string; version: string; rest: string[] } | null {
  const parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'api' && parts[1]) return { group: '', version: parts[1], rest: parts.slice(2) };
  if (parts[0] === 'apis' && parts[1] && parts[2]) return { group: parts[1], version: parts[2], rest: parts.slice(3) };
  return null;
}

/** Shallow-recursive JSON merge patch (RFC 7386). */
function mergePatch(target: any, patch: any): any {
  if (!patch || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out = target && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

export async function startKubeStandIn(options: KubeletOptions = {}): Promise<KubeStandIn> {
  const store = new ObjectStore();
  const kubelet = new Kubelet(store, options);
  const token = randomBytes(16).toString('hex');
  const requests: RecordedRequest[] = [];

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const query = Object.fromEntries(url.searchParams);
    const method = req.method ?? 'GET';
    requests.push({
      method,
      path: url.pathname,
      query,
      contentType: req.headers['content-type'],
      fieldManager: query.fieldManager,
      at: Date.now(),
    });

    if (req.headers.authorization !== `Bearer ${token}`)
      return send(res, 401, status(401, 'Unauthorized', 'Unauthorized'));
    if (url.pathname === '/api') return send(res, 200, { kind: 'APIVersions', versions: ['v1'] });
    if (url.pathname === '/version')
      return send(res, 200, { major: '1', minor: '31', gitVersion: 'v1.31.0-slipway-stand-in' });

    const parsed = parsePath(url.pathname);
    if (!parsed) return send(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
    const { group, version, rest } = parsed;
    if (!rest.length && method === 'GET') {
      const list = discovery(group, version);
      return list
        ? send(res, 200, list)
        : send(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
    }
    // namespaces/<ns>/<resource>[/<name>[/<subresource>]], or <resource> across namespaces.
    let namespace: string | undefined;
    let segments = rest;
    if (segments[0] === 'namespaces' && segments.length >= 3) {
      namespace = segments[1];
      segments = segments.slice(2);
    }
    const [resourceName, name, subresource] = segments;
    const type = RESOURCE_TYPES.find((t) => t.group === group && t.version === version && t.name === resourceName);
    if (!type) return send(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
    const notFound = () =>
      send(
        res,
        404,
        status(404, 'NotFound', `${type.name}.${type.group || 'core'} "${name}" not found`, { name, kind: type.name }),
      );

    if (!name) {
      if (method !== 'GET')
        return send(
          res,
          405,
          status(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource'),
        );
      if (query.watch === 'true' || query.watch === '1') return watch(type, namespace, query.labelSelector, req, res);
      const items = store.list(type.kind, namespace, query.labelSelector);
      return send(res, 200, {
        kind: `${type.kind}List`,
        apiVersion: type.group ? `${type.group}/${type.version}` : type.version,
        metadata: { resourceVersion: store.resourceVersion },
        items,
      });
    }

    if (subresource === 'log' && type.kind === 'Pod' && method === 'GET') {
      const pod = store.get('Pod', namespace, name);
      if (!pod) return notFound();
      const text = kubelet.logs(pod, {
        container: query.container,
        sinceTime: query.sinceTime,
        sinceSeconds: query.sinceSeconds ? Number(query.sinceSeconds) : undefined,
        timestamps: query.timestamps === 'true',
      });
      if (text === null)
        return send(
          res,
          400,
          status(400, 'BadRequest', `container "${query.container}" in pod "${name}" is waiting to start`),
        );
      res.writeHead(200, { 'content-type': 'text/plain' });
      return void res.end(text);
    }

    if (subresource === 'status') return statusSubresource(type, namespace, name, method, req, res, notFound);
    if (subresource) return send(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));

    if (method === 'GET') {
      const obj = store.get(type.kind, namespace, name);
      return obj ? send(res, 200, obj) : notFound();
    }
    if (method === 'DELETE') {
      const policy = query.propagationPolicy ?? 'Background';
      if (!['Background', 'Foreground', 'Orphan'].includes(policy)) {
        return send(res, 400, status(400, 'BadRequest', `propagationPolicy: Unsupported value: "${policy}"`));
      }
      const gone = store.delete(type.kind, namespace, name, policy);
      if (!gone) return notFound();
      return send(res, 200, status(200, '', '', { name, kind: type.name, uid: gone.metadata.uid }));
    }
    if (method === 'PATCH') return patch(type, namespace, name, query, req, res);
    return send(
      res,
      405,
      status(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource'),
    );
  }

  async function patch(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    query: Record<string, string>,
    req: IncomingMessage,
    res: ServerResponse,
  ) {
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
    const body = await readBody(req);
    if (contentType !== 'application/apply-patch+yaml') {
      return send(
        res,
        415,
        status(415, 'UnsupportedMediaType', `the stand-in serves apply patches only, not ${contentType}`),
      );
    }
    if (!query.fieldManager)
      return send(
        res,
        400,
        status(
          400,
          'BadRequest',
          'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
        ),
      );
    let obj: KubeObject;
    try {
      // YAML is a superset of JSON; clients send JSON. A YAML-only body is reported, not guessed at.
      obj = JSON.parse(body);
    } catch {
      return send(
        res,
        415,
        status(415, 'UnsupportedMediaType', 'the stand-in accepts JSON-encoded apply patches only'),
      );
    }
    if (obj.kind !== type.kind || (obj.metadata?.name && obj.metadata.name !== name)) {
      return send(
        res,
        400,
        status(
          400,
          'BadRequest',
          `the kind or name in the body (${obj.kind} ${obj.metadata?.name}) does not match the URL (${type.kind} ${name})`,
        ),
      );
    }
    if (obj.metadata?.namespace && obj.metadata.namespace !== namespace) {
      return send(
        res,
        400,
        status(
          400,
          'BadRequest',
          'the namespace of the provided object does not match the namespace sent on the request',
        ),
      );
    }
    try {
      const { object, created } = store.apply(type, namespace, name, obj, query.fieldManager, query.force === 'true');
      return send(res, created ? 201 : 200, object);
    } catch (err) {
      if (err instanceof ConflictError) {
        return send(
          res,
          409,
          status(409, 'Conflict', err.message, {
            causes: err.conflicts.map((c) => ({
              reason: 'FieldManagerConflict',
              message: `conflict with "${c.manager}"`,
              field: `.${JSON.parse(c.field).join('.')}`,
            })),
          }),
        );
      }
      throw err;
    }
  }

  async function statusSubresource(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    method: string,
    req: IncomingMessage,
    res: ServerResponse,
    notFound: () => void,
  ) {
    const current = store.get(type.kind, namespace, name);
    if (!current) return notFound();
    if (method === 'GET') return send(res, 200, current);
    const body = JSON.parse((await readBody(req)) || '{}');
    if (method === 'PUT') return send(res, 200, store.putStatus(type.kind, namespace, name, body.status));
    if (method === 'PATCH')
      return send(res, 200, store.putStatus(type.kind, namespace, name, mergePatch(current.status, body.status)));
    return send(
      res,
      405,
      status(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource'),
    );
  }

  function watch(
    type: ResourceType,
    namespace: string | undefined,
    selector: string | undefined,
    req: IncomingMessage,
    res: ServerResponse,
  ) {
    const match = selectorMatcher(selector);
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    const stop = store.onChange((e) => {
      if (
        e.object.kind !== type.kind ||
        (namespace && e.object.metadata.namespace !== namespace) ||
        !match(e.object.metadata.labels ?? {})
      )
        return;
      res.write(JSON.stringify(e) + '\n');
    });
    req.on('close', stop);
  }

  const tls = selfSignedCertificate();
  const server: Server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) send(res, 500, status(500, 'InternalError', String(err)));
      else res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  kubelet.start();

  return {
    url,
    token,
    store,
    kubelet,
    requests,
    kubeconfig: (namespace = 'default') =>
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: stand-in',
        '  cluster:',
        `    server: ${url}`,
        `    certificate-authority-data: ${Buffer.from(tls.cert).toString('base64')}`,
        'users:',
        '- name: agent',
        '  user:',
        `    token: ${token}`,
        'contexts:',
        '- name: stand-in',
        '  context:',
        '    cluster: stand-in',
        '    user: agent',
        `    namespace: ${namespace}`,
        'current-context: stand-in',
        '',
      ].join('\n'),
    close: async () => {
      kubelet.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A throwaway certificate for 127.0.0.1, made with the openssl CLI. */
function selfSignedCertificate(): { key: string; cert: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'kube-stand-in-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=kube-stand-in',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        path.join(dir, 'key.pem'),
        '-out',
        path.join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    return {
      key: readFileSync(path.join(dir, 'key.pem'), 'utf8'),
      cert: readFileSync(path.join(dir, 'cert.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
