import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { startKubeStandIn } from '../support/kube-stand-in/server.js';
import { freePort } from '../support/ports.js';

/**
 * The production build, exactly as infra/docker/Dockerfile makes it: `node infra/scripts/build.mjs
 * --package <dir> …` bundles each service and lays it out with its production dependencies only.
 * This test migrates a new database with the packaged CLI and boots the packaged api with plain
 * `node dist/main.js` (NODE_ENV=production): no TypeScript loader, no dev dependency can be used.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

let out: string;
let api: ChildProcess | undefined;
const dbName = `slipway_t_${inject('runId')}_prod_${randomBytes(3).toString('hex')}`;
const dbUrl = (() => {
  const u = new URL(inject('pgServerUrl'));
  u.pathname = `/${dbName}`;
  return u.toString();
})();
const bootstrapKey = `slw_prod_${randomBytes(24).toString('base64url')}`;

const productionEnv = (extra: Record<string, string> = {}) => ({
  PATH: process.env.PATH ?? '',
  NODE_ENV: 'production',
  DATABASE_URL: dbUrl,
  REDIS_URL: inject('redisUrl'),
  SLIPWAY_QUEUE_PREFIX: `slipway_t_${inject('runId')}_prod`,
  SLIPWAY_SECRETS_KEY: randomBytes(32).toString('base64'),
  SLIPWAY_BOOTSTRAP_API_KEY: bootstrapKey,
  SLIPWAY_DATA_DIR: path.join(out, 'data'),
  LOG_LEVEL: 'info',
  ...extra,
});

beforeAll(() => {
  out = mkdtempSync(path.join(tmpdir(), 'slipway-prod-'));
  execFileSync(process.execPath, ['infra/scripts/build.mjs', '--package', out, 'cli', 'api', 'listener-agent'], {
    cwd: ROOT,
    stdio: 'pipe',
  });
}, 240_000);

afterAll(async () => {
  api?.kill('SIGTERM');
  const admin = new pg.Client({ connectionString: inject('pgServerUrl') });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(dbName)} WITH (FORCE)`).finally(() => admin.end());
  rmSync(out, { recursive: true, force: true });
});

describe('production build', () => {
  it('lays out each service as dist/main.js with production dependencies only', () => {
    for (const service of ['cli', 'api', 'listener-agent']) {
      const pkg = JSON.parse(readFileSync(path.join(out, service, 'package.json'), 'utf8'));
      expect(pkg.name).toBe(`@slipway/${service}`);
      expect(readFileSync(path.join(out, service, 'dist/main.js'), 'utf8')).not.toMatch(/from ["']tsx|from ["']vitest/);
      for (const dev of ['tsx', 'vitest', 'esbuild', '@langchain/langgraph-cli']) {
        expect(() => readFileSync(path.join(out, service, 'node_modules', dev, 'package.json')), dev).toThrow();
      }
    }
  });

  it('migrates with the packaged CLI and serves the API from `node dist/main.js`', async () => {
    const migrated = execFileSync(process.execPath, ['dist/main.js', 'migrate', '--create-database'], {
      cwd: path.join(out, 'cli'),
      env: productionEnv(),
      encoding: 'utf8',
    });
    expect(migrated).toMatch(/applied: /);

    const port = await freePort();
    const child = spawn(process.execPath, ['dist/main.js'], {
      cwd: path.join(out, 'api'),
      env: productionEnv({ PORT: String(port) }),
      stdio: 'pipe',
    });
    api = child;
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const base = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 60_000;
    let ready: Response | undefined;
    while (Date.now() < deadline && child.exitCode === null) {
      // The bootstrap admin key sees the checks and details an anonymous probe does not.
      ready = await fetch(`${base}/readyz`, { headers: { 'X-Api-Key': bootstrapKey } }).catch(() => undefined);
      // 200 "degraded" until its Redis connection is up: wait for both stores.
      if (ready?.ok && ((await ready.clone().json()) as { status: string }).status === 'ok') break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(ready?.status, output).toBe(200);
    const readiness = (await ready!.json()) as { details: { data_access: object } };
    expect(readiness).toMatchObject({ status: 'ok', checks: { postgres: 'ok', redis: 'ok' } });
    // The bundle carries the local-trust probe too: apps' access to the stores is reported.
    expect(Object.keys(readiness.details.data_access).sort()).toEqual([
      'fronts_active',
      'postgres_passwordless',
      'redis_default_user_open',
    ]);
    const listeners = await fetch(`${base}/v2/listeners`, { headers: { 'X-Api-Key': bootstrapKey } });
    expect(listeners.status).toBe(200);
    expect(await listeners.json()).toEqual({ resources: [], offset: 0 });
    // The web console is packaged beside the bundle and served from there.
    const consolePage = await fetch(`${base}/console/`);
    expect(consolePage.status).toBe(200);
    expect(await consolePage.text()).toContain('<div id="root">');

    // The packaged listener agent checks in with that api (its poll is the listener's heartbeat),
    // talking to a Kubernetes API (the protocol-level stand-in of test/support/kube-stand-in).
    const headers = { 'X-Api-Key': bootstrapKey, 'Content-Type': 'application/json' };
    const listener = (await (
      await fetch(`${base}/v2/listeners`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          compute_type: 'k8s',
          compute_id: 'prod-check',
          compute_config: { k8s_namespaces: ['agents'] },
        }),
      })
    ).json()) as { id: string };
    const key = (await (
      await fetch(`${base}/v2/api-keys`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ description: 'agent', listener_id: listener.id }),
      })
    ).json()) as { key: string };
    const k8s = await startKubeStandIn();
    const kubeconfig = path.join(out, 'kubeconfig');
    writeFileSync(kubeconfig, k8s.kubeconfig('agents'));
    const agent = spawn(process.execPath, ['dist/main.js'], {
      cwd: path.join(out, 'listener-agent'),
      env: {
        PATH: process.env.PATH ?? '',
        NODE_ENV: 'production',
        SLIPWAY_API_URL: base,
        SLIPWAY_LISTENER_ID: listener.id,
        SLIPWAY_API_KEY: key.key,
        KUBECONFIG: kubeconfig,
        SLIPWAY_AGENT_POLL_INTERVAL_MS: '200',
      },
      stdio: 'pipe',
    });
    let agentOutput = '';
    agent.stdout!.on('data', (d) => (agentOutput += d));
    agent.stderr!.on('data', (d) => (agentOutput += d));
    try {
      let seen: string | null = null;
      for (
        const until = Date.now() + 30_000;
        !seen && Date.now() < until && agent.exitCode === null;
        await new Promise((r) => setTimeout(r, 250))
      ) {
        seen = (
          (await (await fetch(`${base}/v2/listeners/${listener.id}`, { headers })).json()) as {
            last_seen_at: string | null;
          }
        ).last_seen_at;
      }
      expect(seen, agentOutput).not.toBeNull();
      expect(agentOutput).toMatch(/listener-agent started/);
    } finally {
      agent.kill('SIGTERM');
      await new Promise((r) => (agent.exitCode === null ? agent.once('exit', r) : r(null)));
      await k8s.close();
    }

    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    expect(output).toMatch(/api listening/);
  }, 120_000);
});
