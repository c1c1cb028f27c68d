import Joi from 'joi';
import { UnavailableError } from '@slipway/domain';
import { defineRoute, ok, type RouteSpec } from '../http/route.js';
import type { DependencyChecks } from '../metrics/dependencies.js';

const tag = 'Operations';

const health = Joi.object({ status: Joi.string().valid('ok').required() }).id('Health');
const dependencyState = Joi.string().valid('ok', 'unreachable');
const readiness = Joi.object({
  status: Joi.string()
    .valid('ok', 'degraded')
    .required()
    .description('`degraded`: Redis is unreachable; writes are accepted and their jobs wait in the outbox until it is back.'),
  checks: Joi.object({ postgres: dependencyState.required(), redis: dependencyState.required() }).required(),
}).id('Readiness');

export interface OpsDeps {
  dependencies: DependencyChecks;
  /** Built lazily: the document covers every route, this one included. */
  openApiDocument: () => Record<string, unknown>;
}

/** Probes and the API description; no credentials (CONTRACT C11). */
export function opsRoutes({ dependencies, openApiDocument }: OpsDeps): RouteSpec[] {
  return [
    defineRoute({
      method: 'get',
      path: '/healthz',
      operationId: 'healthz',
      summary: 'Liveness: the process is up',
      tag,
      auth: 'none',
      responses: { 200: { description: 'Up', schema: health } },
      handler: () => ok({ status: 'ok' }),
    }),
    defineRoute({
      method: 'get',
      path: '/readyz',
      operationId: 'readyz',
      summary: 'Readiness: the api can accept writes (Postgres answers)',
      tag,
      auth: 'none',
      responses: {
        200: { description: 'Ready (`ok`), or ready without Redis (`degraded`: writes succeed, their jobs wait in the outbox)', schema: readiness },
        503: { description: 'Postgres does not answer; `detail` says what is unreachable' },
      },
      handler: async () => {
        const checks = await dependencies.check();
        if (checks.postgres !== 'ok') {
          const down = checks.redis === 'ok' ? 'Postgres' : 'Postgres and Redis';
          throw new UnavailableError(`Not ready: ${down} unreachable.`);
        }
        return ok({ status: checks.redis === 'ok' ? 'ok' : 'degraded', checks });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/openapi.json',
      operationId: 'openapi',
      summary: 'This API as an OpenAPI 3.1 document',
      tag,
      auth: 'none',
      responses: { 200: { description: 'OpenAPI 3.1 document', schema: Joi.object().unknown(true).id('OpenApiDocument') } },
      handler: () => ok(openApiDocument()),
    }),
  ];
}
