/**
 * The serving key check as an nginx `auth_request` endpoint (bench/scenarios/serving.ts): what a
 * deployer-driven nginx would call for every request to a deployment. It runs the deployer's own
 * ServingAuth against the stack's database and Redis (the lockout check, the cached key lookup,
 * the budgets — off, as the bench runs them), as its own Node process like the deployer, and
 * answers 204 (let through) or the denial's status. nginx passes the original method and URI in
 * `X-Original-Method` / `X-Original-URI`, and the original headers (the key among them).
 *
 * Environment: PORT, DATABASE_URL, REDIS_URL, SLIPWAY_QUEUE_PREFIX, DEPLOYMENT_ID.
 */
import { createServer } from 'node:http';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { ApiKeyCache, RateLimits } from '@slipway/access';
import { createDataSource } from '@slipway/db';
import { createLogger } from '@slipway/logging';
import { ServingAuth } from '../../services/deployer/src/serving-auth.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const log = createLogger({ name: 'bench-auth-request', level: 'warn' });
const dataSource = createDataSource({ url: env('DATABASE_URL'), poolSize: 4, applicationName: 'slipway-bench-auth' });
await dataSource.initialize();
const redis = new Redis(env('REDIS_URL'), { maxRetriesPerRequest: null });
const auth = new ServingAuth({
  dataSource,
  // The deployer's settings: keys cached for at most SLIPWAY_API_KEY_CACHE_TTL_MS's default.
  keys: new ApiKeyCache(dataSource, 500, log),
  limits: new RateLimits({
    settings: {
      windowSeconds: 60,
      perKey: 0,
      perListenerAgent: 0,
      perAddress: 0,
      authFailures: 20,
      authFailureWindowSeconds: 300,
    },
    redis,
    keyPrefix: env('SLIPWAY_QUEUE_PREFIX'),
    log,
    registry: new Registry(),
  }),
});
const check = auth.forDeployment(env('DEPLOYMENT_ID'));

createServer((req, res) => {
  const uri = req.headers['x-original-uri'];
  if (typeof uri !== 'string') {
    res.writeHead(req.url === '/healthz' ? 200 : 400).end();
    return;
  }
  req.url = uri;
  req.method = String(req.headers['x-original-method'] ?? 'GET');
  check(req).then(
    (denial) => {
      // nginx passes a 401 or 403 on; any other status of the subrequest is its 500.
      if (denial) res.writeHead(denial.status === 401 ? 401 : 403, denial.headers).end();
      else res.writeHead(204).end();
    },
    () => res.writeHead(500).end(),
  );
}).listen(Number(env('PORT')), '127.0.0.1');
