import { readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiNotifications, createApp, type App } from '@slipway/api/app';
import { renderReference } from '@slipway/api/openapi/reference-markdown';
import { DNS1123_LABEL } from '@slipway/domain';
import { producerConnection } from '@slipway/jobs';
import { createLogger } from '@slipway/logging';
import type { Redis } from 'ioredis';
import { HttpClient } from '../support/http.js';
import { LogCapture } from '../support/log-capture.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The document must describe what Express really serves, so the routes come from the live
 * router stack, not from the route specs the document is built from (that would be circular).
 */
interface MountedRoute {
  method: string;
  /** Full Express path, mount prefix included (`/api-host/v2/listeners/:listener_id`). */
  path: string;
}

interface MountedMiddleware {
  path: string;
  name: string;
}

const joinPath = (prefix: string, path: string): string => (path === '/' ? prefix || '/' : prefix + path);

/**
 * Mounts that serve a UI, not a JSON API, and so stay out of the document (the swagger UI, Bull
 * Board). Matched without the `/api-host` prefix.
 */
const UI_MOUNTS = ['/docs', '/admin/queues', '/console'];
/**
 * `/metrics` answers Prometheus text, not JSON, so it is not an operation of the JSON API
 * either; it is mounted as its own router like the UIs and kept out of the document with them.
 */
const TEXT_MOUNTS = ['/metrics'];
const isUiMount = (path: string): boolean =>
  [...UI_MOUNTS, ...TEXT_MOUNTS].includes(path.replace(/^\/api-host(?=\/)/, ''));

/** Express 5 (router 2): routes are layers with `route`; nested routers expose `handle.stack`. */
function walk(stack: any[], prefix: string, routes: MountedRoute[], middleware: MountedMiddleware[]): void {
  for (const layer of stack) {
    if (layer.route) {
      const paths: string[] = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
      for (const path of paths) {
        for (const [method, on] of Object.entries(layer.route.methods as Record<string, boolean>)) {
          if (on) routes.push({ method, path: joinPath(prefix, path) });
        }
      }
      continue;
    }
    // `rawPath` is where router 2 keeps the mount path of a `use()` layer.
    expect(typeof layer.rawPath, `mount path of middleware ${layer.name}`).toBe('string');
    const mountedAt = prefix + (layer.rawPath === '/' ? '' : layer.rawPath);
    if (isUiMount(mountedAt)) middleware.push({ path: mountedAt, name: layer.name });
    else if (Array.isArray(layer.handle?.stack)) walk(layer.handle.stack, mountedAt, routes, middleware);
    else middleware.push({ path: mountedAt || '/', name: layer.name });
  }
}

function mountedRoutesOf(app: App): { routes: MountedRoute[]; middleware: MountedMiddleware[] } {
  const routes: MountedRoute[] = [];
  const middleware: MountedMiddleware[] = [];
  walk((app.express as any).router.stack, '', routes, middleware);
  return { routes, middleware };
}

/** `/api-host/v2/x/:id` (or a named wildcard `*rest`) → `/v2/x/{id}`; the prefix is a server of the document, not a path. */
function documentedPath(path: string): string {
  return path.replace(/^\/api-host(?=\/)/, '').replace(/[:*]([A-Za-z0-9_]+)/g, '{$1}');
}

function collectRefs(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) collectRefs(v, out);
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref') out.push(v as string);
      else collectRefs(v, out);
    }
  }
  return out;
}

let api: TestApi;
let app: App;
let redis: Redis;
let server: Server;
let http: HttpClient;
let doc: any;
let mounted: ReturnType<typeof mountedRoutesOf>;

beforeAll(async () => {
  api = await startTestApi();
  // A second app built exactly as the harness builds it, so its router can be walked.
  const logger = createLogger({ name: 'api', level: 'debug', destination: new LogCapture() });
  redis = producerConnection(api.config.redisUrl, logger);
  app = createApp({
    config: api.config,
    dataSource: api.dataSource,
    redis,
    queues: api.queues,
    logger,
    notifications: apiNotifications(api.config, logger),
  });
  server = app.express.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  http = new HttpClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, null);
  const res = await api.http.get('/openapi.json', { key: null });
  expect(res.status).toBe(200);
  doc = res.body;
  mounted = mountedRoutesOf(app);
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  redis?.disconnect();
  await api?.close();
});

describe('GET /openapi.json', () => {
  it('is served without a key, under both prefixes, identical for identically built apps', async () => {
    expect((await http.get('/openapi.json')).body).toEqual(doc);
    const prefixed = await api.http.get('/api-host/openapi.json', { key: null });
    expect(prefixed.status).toBe(200);
    expect(prefixed.body).toEqual(doc);
  });

  it('is an OpenAPI 3.1.0 document with the security schemes', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info).toMatchObject({ title: 'Slipway', version: expect.any(String) });
    expect(doc.components.securitySchemes).toMatchObject({
      ApiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
      TenantId: { type: 'apiKey', in: 'header', name: 'X-Tenant-Id' },
      BearerAuth: { type: 'http', scheme: 'bearer' },
    });
    // Every route is also served under /api-host (docs/api.md, Conventions): the document says so as a server.
    expect(doc.servers).toEqual([{ url: api.config.publicUrl }, { url: `${api.config.publicUrl}/api-host` }]);
  });

  it('passes the OpenAPI 3.1 schema validator (and the validator does catch a broken document)', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');

    const broken = structuredClone(doc);
    delete broken.info;
    broken.paths['/v2/listeners'].get.responses['200'] = { content: {} };
    expect((await new Validator().validate(broken)).valid).toBe(false);
  });
});

describe('every mounted route is documented', () => {
  it('finds the routes, and only known UIs as path-mounted middleware', () => {
    const keys = mounted.routes.map((r) => `${r.method} ${r.path}`);
    // Sanity: the walk sees what we know is there, under both prefixes.
    expect(keys).toEqual(
      expect.arrayContaining([
        'get /healthz',
        'get /api-host/healthz',
        'post /v2/listeners',
        'delete /api-host/v2/listeners/:listener_id',
        'get /openapi.json',
      ]),
    );
    expect(mounted.routes.length).toBe(app.routes.length * 2);
    // Anything mounted on a path other than `/` without being a route is a known UI.
    const onPaths = mounted.middleware.filter((m) => m.path !== '/');
    expect(onPaths.map((m) => m.path)).toEqual(
      expect.arrayContaining([
        '/docs',
        '/api-host/docs',
        '/admin/queues',
        '/api-host/admin/queues',
        '/metrics',
        '/api-host/metrics',
      ]),
    );
    for (const m of onPaths) expect(isUiMount(m.path), `${m.name} at ${m.path}`).toBe(true);
  });

  it('has a route spec for every mounted route, and a mounted route for every spec', () => {
    const specKeys = new Set(app.routes.map((r) => `${r.method} ${r.path}`));
    const mountedKeys = new Set(mounted.routes.map((r) => `${r.method} ${r.path.replace(/^\/api-host(?=\/)/, '')}`));
    expect([...mountedKeys].sort()).toEqual([...specKeys].sort());
  });

  it('documents each mounted (method, path) with its parameters, body and response schemas', () => {
    const checked: string[] = [];
    for (const { method, path } of mounted.routes) {
      const where = `${method.toUpperCase()} ${path}`;
      // Optional groups and unnamed wildcards would need more than `:param` (or `*param`) → `{param}`.
      expect(path, where).not.toMatch(/[{}?]|\*(?![A-Za-z0-9_])/);
      const operation = doc.paths[documentedPath(path)]?.[method];
      expect(operation, `${where} is missing from /openapi.json`).toBeDefined();

      const spec = app.routes.find((r) => r.method === method && r.path === path.replace(/^\/api-host(?=\/)/, ''))!;
      expect(spec, `${where} has a route spec`).toBeDefined();
      expect(spec.hidden, where).toBeFalsy();
      const parameters: Array<{ name: string; in: string; required?: boolean; schema?: unknown }> =
        operation.parameters ?? [];

      for (const [, name] of path.matchAll(/[:*]([A-Za-z0-9_]+)/g)) {
        const param = parameters.find((p) => p.in === 'path' && p.name === name);
        expect(param, `${where}: path parameter ${name}`).toMatchObject({ required: true, schema: expect.any(Object) });
      }
      for (const name of Object.keys((spec.request?.query?.describe() as any)?.keys ?? {})) {
        expect(
          parameters.find((p) => p.in === 'query' && p.name === name),
          `${where}: query parameter ${name}`,
        ).toBeDefined();
      }

      if (spec.request?.body) {
        expect(
          operation.requestBody?.content?.['application/json']?.schema,
          `${where}: request body schema`,
        ).toBeDefined();
      } else {
        expect(operation.requestBody, `${where}: no body is accepted`).toBeUndefined();
      }

      for (const status of Object.keys(spec.responses)) expect(operation.responses, where).toHaveProperty(status);
      const successes = Object.keys(operation.responses).filter((s) => /^2\d\d$/.test(s));
      expect(successes.length, `${where}: a 2xx response`).toBeGreaterThan(0);
      for (const status of successes) {
        const response = operation.responses[status];
        if (status === '204') expect(response.content, `${where} 204 has no body`).toBeUndefined();
        else
          expect(
            response.content?.[spec.responses[Number(status)]?.contentType ?? 'application/json']?.schema,
            `${where} ${status} schema`,
          ).toBeDefined();
      }

      expect(operation.security, where).toEqual(
        spec.auth === 'none' ? [] : expect.arrayContaining([{ ApiKey: [] }, { BearerAuth: [] }]),
      );
      checked.push(where);
    }
    expect(checked.length).toBe(mounted.routes.length);
  });

  it('documents nothing that is not mounted', () => {
    const mountedKeys = new Set(mounted.routes.map((r) => `${r.method} ${documentedPath(r.path)}`));
    for (const [path, operations] of Object.entries<Record<string, unknown>>(doc.paths)) {
      for (const method of Object.keys(operations))
        expect(mountedKeys, `${method} ${path}`).toContain(`${method} ${path}`);
    }
  });

  it('resolves every $ref within components.schemas', () => {
    const refs = collectRefs(doc);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of new Set(refs)) {
      expect(ref).toMatch(/^#\/components\/schemas\/[^/]+$/);
      const name = ref.slice('#/components/schemas/'.length);
      expect(doc.components.schemas, ref).toHaveProperty([name]);
      expect(Object.keys(doc.components.schemas[name]).length, `${ref} is not an empty placeholder`).toBeGreaterThan(0);
    }
  });
});

describe('limits and roles', () => {
  it('documents the 429 with Retry-After on every operation', () => {
    const operations = Object.values(doc.paths).flatMap((ops: any) => Object.values(ops)) as any[];
    expect(operations.length).toBeGreaterThan(30);
    for (const operation of operations) {
      const limited = operation.responses['429'];
      expect(limited, operation.operationId).toMatchObject({
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        headers: { 'Retry-After': { schema: { type: 'integer', minimum: 1 } } },
      });
    }
  });

  it('says which operations need an organization admin', () => {
    expect(doc.paths['/v2/auth/providers'].post.description).toBe('Requires an organization admin key.');
    expect(doc.paths['/v2/auth/providers/{provider_id}'].delete.description).toBe(
      'Requires an organization admin key.',
    );
    expect(doc.paths['/v2/api-keys'].post.description).toBe('Requires an admin key.');
  });
});

describe('the schemas reflect validation', () => {
  const schemaOf = (s: any): any => (s?.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s);

  it('documents listener list paging bounds', () => {
    const params = doc.paths['/v2/listeners'].get.parameters;
    expect(params.find((p: any) => p.name === 'limit')).toMatchObject({
      in: 'query',
      required: false,
      schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
    });
    expect(params.find((p: any) => p.name === 'offset')).toMatchObject({
      in: 'query',
      schema: { type: 'integer', minimum: 0, default: 0 },
    });
  });

  it('documents the required fields of CreateListener and the DNS-1123 namespace pattern', () => {
    const body = doc.paths['/v2/listeners'].post.requestBody;
    expect(body.required).toBe(true);
    expect(body.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/CreateListener' });
    const create = doc.components.schemas.CreateListener;
    expect(create.required).toEqual(expect.arrayContaining(['compute_type', 'compute_id', 'compute_config']));
    expect(create.required).not.toContain('version');
    expect(create.properties.compute_type).toMatchObject({ type: 'string', enum: ['k8s'] });
    expect(create.properties.compute_id).toMatchObject({ type: 'string', minLength: 1, maxLength: 253 });

    const namespaces = schemaOf(create.properties.compute_config).properties.k8s_namespaces;
    expect(namespaces.type).toEqual(['array', 'null']);
    expect(namespaces.items).toMatchObject({ type: 'string', maxLength: 63, pattern: DNS1123_LABEL.source });
    // The documented pattern behaves as the validator does.
    const pattern = new RegExp(namespaces.items.pattern, 'u');
    expect(pattern.test('agents-1')).toBe(true);
    expect(pattern.test('Not_A_Label')).toBe(false);
  });

  it('documents path ids as UUIDs and list responses as envelopes', () => {
    const get = doc.paths['/v2/listeners/{listener_id}'].get;
    expect(get.parameters).toEqual([
      { name: 'listener_id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } },
    ]);
    const list = schemaOf(doc.paths['/v2/listeners'].get.responses['200'].content['application/json'].schema);
    expect(list.required).toEqual(['resources', 'offset']);
    expect(list.properties.resources.items).toEqual({ $ref: '#/components/schemas/Listener' });
  });
});

describe('request body examples (what /docs offers to send)', () => {
  it("every example is valid against the operation's own joi schema", () => {
    const bodies = new Map(app.routes.map((r) => [`${r.method} ${documentedPath(r.path)}`, r.request?.body]));
    const examples = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
      Object.entries(item).flatMap(([method, op]) => {
        const example = op.requestBody?.content?.['application/json']?.example;
        return example === undefined ? [] : [{ key: `${method} ${path}`, example }];
      }),
    );
    expect(examples.map((e) => e.key)).toContain('post /v2/deployments');
    for (const { key, example } of examples)
      expect(bodies.get(key)!.validate(example, { abortEarly: false }).error?.message, key).toBeUndefined();
  });

  it('POST /v2/deployments with the example body creates the deployment (201)', async () => {
    const example = doc.paths['/v2/deployments'].post.requestBody.content['application/json'].example;
    const res = await api.http.post('/v2/deployments', example);
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      name: example.name,
      source: 'external_container',
      secrets: [{ name: 'OPENAI_API_KEY', value: '********' }],
    });
    const [row] = await api.dataSource.query(`SELECT count(*)::int AS n FROM deployments WHERE id = $1`, [res.body.id]);
    expect(row.n).toBe(1);
  });
});

describe('docs/reference.md', () => {
  it('is the rendering of this document (regenerate with `pnpm docs:reference`)', () => {
    const file = new URL('../../docs/reference.md', import.meta.url);
    const rendered = renderReference(doc);
    if (process.env.SLIPWAY_WRITE_REFERENCE === '1') writeFileSync(file, rendered);
    // Every documented operation appears, so a route added without regenerating fails here.
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(item)) expect(rendered).toContain(`### \`${method.toUpperCase()} ${path}\``);
    }
    expect(readFileSync(file, 'utf8'), 'docs/reference.md is stale: run `pnpm docs:reference`').toBe(rendered);
  });
});

describe('GET /docs', () => {
  it.each(['/docs/', '/api-host/docs/'])('%s serves the HTML reference, pointed at its own document', async (path) => {
    const res = await api.http.get(path, { key: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.text).toMatch(/<html/i);
    expect(res.text).toContain('swagger-ui');
    const init = await api.http.get(`${path}swagger-ui-init.js`, { key: null });
    expect(init.status).toBe(200);
    expect(init.text).toContain(`"url": "${path.replace(/docs\/$/, 'openapi.json')}"`);
  });
});
