import Joi from 'joi';
import { UnavailableError } from '@slipway/domain';
import { defineRoute, ok, type RouteSpec } from '../http/route.js';
import type { DependencyChecks } from '../metrics/dependencies.js';
import type { LocalTrustCheck } from '../metrics/local-trust.js';

const tag = 'Operations';

const health = Joi.object({ status: Joi.string().valid('ok').required() }).id('Health');
const dependencyState = Joi.string().valid('ok', 'unreachable');
const readiness = Joi.object({
  status: Joi.string()
    .valid('ok', 'degraded')
    .required()
    .description('`degraded`: Redis is unreachable; writes are accepted and their jobs wait in the outbox until it is back.'),
  checks: Joi.object({ postgres: dependencyState.required(), redis: dependencyState.required() }).required(),
  details: Joi.object({
    data_access: Joi.object({
      postgres_passwordless: Joi.boolean().allow(null).required().description('Postgres lets local clients in without a password (`trust`); null: could not tell.'),
      redis_default_user_open: Joi.boolean().allow(null).required().description("Redis's `default` user needs no password; null: could not tell."),
      fronts_active: Joi.object({ postgres: Joi.boolean().required(), redis: Joi.boolean().required() })
        .required()
        .description("Whether deployed apps reach that store through the deployer's per-deployment fronts (only their own role and user get through)."),
    }).required(),
  }).description('How deployed apps reach the local Postgres and Redis (absent where not probed).'),
}).id('Readiness');

export interface OpsDeps {
  dependencies: DependencyChecks;
  /** Passwordless access to the local stores, reported in details. */
  localTrust?: LocalTrustCheck;
  /** Built lazily: the document covers every route, this one included. */
  openApiDocument: () => Record<string, unknown>;
}

/** Probes and the API description; no credentials (docs/api.md, Operational endpoints). */
export function opsRoutes({ dependencies, localTrust, openApiDocument }: OpsDeps): RouteSpec[] {
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
        const details = localTrust ? { data_access: await localTrust.view() } : undefined;
        return ok({ status: checks.redis === 'ok' ? 'ok' : 'degraded', checks, ...(details && { details }) });
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
