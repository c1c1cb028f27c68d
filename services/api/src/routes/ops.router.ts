import Joi from 'joi';
import type { Redis } from 'ioredis';
import type { DataSource } from '@slipway/db';
import { UnavailableError } from '@slipway/domain';
import { defineRoute, ok, type RouteSpec } from '../http/route.js';

const tag = 'Operations';
const CHECK_TIMEOUT_MS = 2_000;

function withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const health = Joi.object({ status: Joi.string().valid('ok').required() }).id('Health');
const readiness = Joi.object({
  status: Joi.string().valid('ok').required(),
  checks: Joi.object({ postgres: Joi.string().required(), redis: Joi.string().required() }).required(),
}).id('Readiness');

export interface OpsDeps {
  dataSource: DataSource;
  redis: Redis;
  /** Built lazily: the document covers every route, this one included. */
  openApiDocument: () => Record<string, unknown>;
}

/** Probes and the API description; no credentials (CONTRACT C11). */
export function opsRoutes({ dataSource, redis, openApiDocument }: OpsDeps): RouteSpec[] {
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
      summary: 'Readiness: Postgres and Redis answer',
      tag,
      auth: 'none',
      responses: {
        200: { description: 'Ready', schema: readiness },
        503: { description: 'A dependency does not answer; `detail` says which' },
      },
      handler: async () => {
        const [pg, rd] = await Promise.allSettled([
          withTimeout(dataSource.query('SELECT 1'), 'Postgres'),
          withTimeout(redis.ping(), 'Redis'),
        ]);
        const failed = [pg.status === 'rejected' ? 'Postgres' : null, rd.status === 'rejected' ? 'Redis' : null].filter(Boolean);
        if (failed.length) throw new UnavailableError(`Not ready: ${failed.join(' and ')} unreachable.`);
        return ok({ status: 'ok', checks: { postgres: 'ok', redis: 'ok' } });
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
