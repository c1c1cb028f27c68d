import Joi from 'joi';
import type { Logger } from '@slipway/logging';
import type { Principal } from '../auth/principal.js';
import { defineRoute, ok, type RouteSpec } from '../http/route.js';
import type { DependencyChecks } from '../metrics/dependencies.js';
import type { LocalTrustCheck } from '../metrics/local-trust.js';

const tag = 'Operations';

const health = Joi.object({ status: Joi.string().valid('ok').required() }).id('Health');
const unavailable = Joi.object({ status: Joi.string().valid('unavailable').required() }).id('Unavailable');
const dependencyState = Joi.string().valid('ok', 'unreachable');
const readiness = Joi.object({
  status: Joi.string()
    .valid('ok', 'degraded')
    .required()
    .description(
      '`degraded`: Redis is unreachable; writes are accepted and their jobs wait in the outbox until it is back.',
    ),
  checks: Joi.object({ postgres: dependencyState.required(), redis: dependencyState.required() }).required(),
  details: Joi.object({
    data_access: Joi.object({
      postgres_passwordless: Joi.boolean()
        .allow(null)
        .required()
        .description('Postgres lets local clients in without a password (`trust`); null: could not tell.'),
      redis_default_user_open: Joi.boolean()
        .allow(null)
        .required()
        .description("Redis's `default` user needs no password; null: could not tell."),
      fronts_active: Joi.object({ postgres: Joi.boolean().required(), redis: Joi.boolean().required() })
        .required()
        .description(
          "Whether deployed apps reach that store through the deployer's per-deployment fronts (only their own role and user get through).",
        ),
    }).required(),
  }).description('How deployed apps reach the local Postgres and Redis (absent where not probed).'),
}).id('Readiness');
const readinessAnswer = Joi.alternatives(health, readiness);

export interface OpsDeps {
  dependencies: DependencyChecks;
  /** Passwordless access to the local stores, reported in details. */
  localTrust?: LocalTrustCheck;
  /** Built lazily: the document covers every route, this one included. */
  openApiDocument: () => Record<string, unknown>;
}

/**
 * Probes and the API description; no credentials (docs/api.md, Operational endpoints). The probes
 * are never charged to a budget, and tell an anonymous caller only ok or not ok: what is down,
 * and how deployed apps reach the local stores, only an admin's credential sees
 * (and the log, when the api turns unready).
 */
export function opsRoutes({ dependencies, localTrust, openApiDocument }: OpsDeps, log: Logger): RouteSpec[] {
  let wasReady = true;
  return [
    defineRoute({
      method: 'get',
      path: '/healthz',
      operationId: 'healthz',
      summary: 'Liveness: the process is up',
      tag,
      auth: 'probe',
      responses: { 200: { description: 'Up', schema: health } },
      handler: () => ok({ status: 'ok' }),
    }),
    defineRoute({
      method: 'get',
      path: '/readyz',
      operationId: 'readyz',
      summary: 'Readiness: the api can accept writes (Postgres answers)',
      tag,
      auth: 'probe',
      responses: {
        200: {
          description:
            'Ready: `{"status":"ok"}`. An admin\'s credential gets the checks and details as well (`degraded`: ' +
            'ready without Redis; writes succeed, their jobs wait in the outbox)',
          schema: readinessAnswer,
        },
        503: {
          description: 'Postgres does not answer: `{"status":"unavailable"}`; the api logs what is unreachable',
          schema: unavailable,
        },
      },
      handler: async (ctx) => {
        const checks = await dependencies.check();
        const ready = checks.postgres === 'ok';
        if (ready !== wasReady) {
          wasReady = ready;
          if (ready) log.info({ checks }, 'ready again: Postgres answers');
          else
            log.error(
              { checks },
              `not ready: ${checks.redis === 'ok' ? 'Postgres' : 'Postgres and Redis'} unreachable`,
            );
        }
        if (!ready) return { status: 503, body: { status: 'unavailable' } };
        if (!isAdmin(ctx.principal)) return ok({ status: 'ok' });
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
      responses: {
        200: { description: 'OpenAPI 3.1 document', schema: Joi.object().unknown(true).id('OpenApiDocument') },
      },
      handler: () => ok(openApiDocument()),
    }),
  ];
}

/** An admin key or token (of a workspace or the organization); never a listener agent's key. */
function isAdmin(principal: Principal | null): boolean {
  return principal?.role === 'admin' && !principal.listenerId;
}
