import type { RouteSpec } from '../http/route.js';
import { joiToJsonSchema, objectKeys, type Components, type JsonSchema } from './joi-to-json-schema.js';

export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
  serverUrl?: string;
}

const ERROR_SCHEMA: JsonSchema = {
  type: 'object',
  properties: { detail: { type: 'string' } },
  required: ['detail'],
};

const VALIDATION_ERROR_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    detail: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          loc: { type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'integer' }] } },
          msg: { type: 'string' },
          type: { type: 'string' },
        },
        required: ['loc', 'msg', 'type'],
      },
    },
  },
  required: ['detail'],
};

const KEYED_SECURITY: Array<Record<string, string[]>> = [
  { ApiKey: [] },
  { ApiKey: [], TenantId: [] },
  { BearerAuth: [] },
  { BearerAuth: [], TenantId: [] },
];
/** Who may call a route, as OpenAPI security requirements (`{}`: anyone). */
const SECURITY: Record<RouteSpec['auth'], Array<Record<string, string[]>>> = {
  none: [],
  probe: [{}, { ApiKey: [] }, { BearerAuth: [] }],
  organization: KEYED_SECURITY,
  workspace: KEYED_SECURITY,
  'listener-agent': KEYED_SECURITY,
};

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

/** Express `:param` → OpenAPI `{param}`. */
export const toOpenApiPath = (path: string): string => path.replace(/[:*]([A-Za-z0-9_]+)/g, '{$1}');

/**
 * Builds the OpenAPI 3.1 document from the same route specs that mount and validate the API,
 * so every mounted route is documented with the schemas that really apply to it.
 */
export function buildOpenApiDocument(routes: readonly RouteSpec[], info: OpenApiInfo): Record<string, unknown> {
  const schemas: Components = { Error: ERROR_SCHEMA, ValidationError: VALIDATION_ERROR_SCHEMA };
  const paths: Record<string, Record<string, unknown>> = {};

  for (const route of routes) {
    if (route.hidden) continue;
    const parameters: unknown[] = [];
    const { params, query, body, headers } = route.request ?? {};
    if (params) {
      for (const key of objectKeys(params))
        parameters.push({ name: key.name, in: 'path', required: true, schema: key.schema });
    }
    if (query) {
      for (const key of objectKeys(query))
        parameters.push({ name: key.name, in: 'query', required: key.required, schema: key.schema });
    }
    if (headers) {
      for (const key of objectKeys(headers))
        parameters.push({ name: key.name, in: 'header', required: key.required, schema: key.schema });
    }

    const responses: Record<string, unknown> = {};
    for (const [status, spec] of Object.entries(route.responses)) {
      responses[status] = spec.schema
        ? {
            description: spec.description,
            content: { [spec.contentType ?? 'application/json']: { schema: joiToJsonSchema(spec.schema, schemas) } },
          }
        : { description: spec.description };
    }
    const keyed = route.auth !== 'none' && route.auth !== 'probe';
    if (route.auth === 'probe') responses['401'] ??= errorResponse('A credential was sent and is not valid');
    if (keyed) {
      responses['401'] ??= errorResponse('Missing or invalid credentials');
      responses['403'] ??= errorResponse('Credentials not allowed here (role, scope or missing X-Tenant-Id)');
    }
    // Every request but a probe is charged to a budget: its key's, or its client address's (docs/api.md, Errors).
    responses['429'] ??= {
      ...errorResponse(
        "Rate limited: the caller's request budget is spent, or its credential or address failed to authenticate too often",
      ),
      headers: {
        'Retry-After': {
          description: 'Seconds until the budget allows another request',
          schema: { type: 'integer', minimum: 1 },
        },
      },
    };
    if (params || query || body || headers || keyed) {
      responses['422'] ??= {
        description: 'Validation error',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/ValidationError' } } },
      };
    }

    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.tag],
      parameters,
      responses,
      security: SECURITY[route.auth],
    };
    if (route.admin)
      operation.description =
        route.admin === 'organization' ? 'Requires an organization admin key.' : 'Requires an admin key.';
    if (body) {
      const described = body.describe() as { flags?: { presence?: string }; examples?: unknown[] };
      // The body's own example (joi `.example()`), where Swagger UI takes a request body's sample from.
      const example = described.examples?.[0];
      operation.requestBody = {
        required: described.flags?.presence === 'required',
        content: {
          'application/json': { schema: joiToJsonSchema(body, schemas), ...(example === undefined ? {} : { example }) },
        },
      };
    }
    (paths[toOpenApiPath(route.path)] ??= {})[route.method] = operation;
  }

  return {
    openapi: '3.1.0',
    info: { title: info.title, version: info.version, ...(info.description ? { description: info.description } : {}) },
    ...(info.serverUrl ? { servers: [{ url: info.serverUrl }, { url: `${info.serverUrl}/api-host` }] } : {}),
    paths,
    components: {
      schemas,
      securitySchemes: {
        ApiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
        TenantId: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Tenant-Id',
          description: 'Workspace UUID; required with organization-scoped keys',
        },
        BearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key, or a JWT from the configured issuer' },
      },
    },
  };
}
