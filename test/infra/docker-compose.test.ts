import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '@slipway/config';
import { CATALOG_HARDENING } from '@slipway/db';
import { registryConfiguration } from '@slipway/registry';
import { CATATONIT } from '@slipway/runtime';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** `docker compose` (v2 plugin) or `docker-compose` (v1): whichever this machine has. */
function composeCommand(): string[] | null {
  for (const cmd of [['docker', 'compose'], ['docker-compose']]) {
    const probe = spawnSync(cmd[0]!, [...cmd.slice(1), 'version'], { stdio: 'ignore' });
    if (!probe.error && probe.status === 0) return cmd;
  }
  return null;
}

const compose = composeCommand();
// CI installs docker-compose and sets this, so the lint can never silently not run there.
const required = process.env.SLIPWAY_REQUIRE_COMPOSE === '1';

/** What an operator puts in .env (the compose file's header): every password is required. */
const REQUIRED = {
  SLIPWAY_SECRETS_KEY: 'c2xpcHdheS10ZXN0LWtleS0zMi1ieXRlcy1sb25nISE=',
  SLIPWAY_POSTGRES_PASSWORD: 'pg-superuser-pw-0a1b2c',
  SLIPWAY_DB_PASSWORD: 'control-plane-db-pw-3d4e5f',
  SLIPWAY_REDIS_PASSWORD: 'redis-pw-6a7b8c',
};

/** The same without any of the variables it may have from the environment. */
const withoutRequired = () => Object.fromEntries(Object.entries(process.env).filter(([name]) => !(name in REQUIRED)));

describe.runIf(compose || required)('docker-compose.yml', () => {
  const run = (...args: string[]) =>
    execFileSync(compose![0]!, [...compose!.slice(1), '-f', 'docker-compose.yml', ...args], {
      cwd: ROOT,
      env: { ...withoutRequired(), ...REQUIRED },
      encoding: 'utf8',
    });
  /** The resolved configuration (`config`), parsed. */
  const resolved = () => parse(run('config')) as { services: Record<string, Record<string, any>> };

  it('passes `compose config`', () => {
    expect(compose, 'docker compose / docker-compose must be installed').not.toBeNull();
    run('config', '-q');
  });

  it('defines postgres, redis, a one-shot migrate, the api, the two workers and the image registry', () => {
    expect(run('config', '--services').trim().split('\n').sort()).toEqual([
      'api',
      'builder',
      'deployer',
      'edge',
      'migrate',
      'postgres',
      'redis',
      'registry',
      'registry-config',
      'registry-guard',
    ]);
  });

  it('runs registry:2 on the configuration the cli generates into the shared data dir', () => {
    const text = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
    expect(text).toMatch(/registry-config:[\s\S]*?command: \["node", "dist\/main\.js", "registry-config"\]/);
    expect(text).toMatch(
      /\n  registry:\n    image: registry:2\n    command: \["serve", "\/var\/lib\/slipway\/registry\/config\.yml"\]/,
    );
    expect(text).toMatch(/registry-config:\n\s*condition: service_completed_successfully/);
  });

  it('puts the push guard in front of registry:2: only the guard is published, distribution listens on its loopback', () => {
    const { services } = resolved();
    const registry = services.registry!;
    const guard = services['registry-guard']!;
    // distribution publishes nothing and shares the guard's network namespace: no way around the guard.
    expect(registry.image).toBe('registry:2');
    expect(registry.ports ?? []).toEqual([]);
    expect(registry.network_mode).toBe('service:registry-guard');
    // The guard: the cli image's `registry-guard`, on the registry's address, published on 5000.
    const text = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
    const block = text.split(/\n  registry-guard:\n/)[1]!.split(/\n  [a-z-]+:\n/)[0]!;
    expect(block).toContain('target: cli');
    expect(guard.command).toEqual(['node', 'dist/main.js', 'registry-guard']);
    expect(JSON.stringify(guard.ports)).toMatch(/"published":"?5000"?/);
    expect(JSON.stringify(guard.ports)).toMatch(/"target":5000/);
    expect(guard.environment.DATABASE_URL).toMatch(/^postgres:\/\//);
    // Every client (api, deployer, builder) goes through the guard; distribution sits where the guard forwards.
    for (const name of ['api', 'builder', 'deployer', 'registry-guard', 'registry-config']) {
      expect(services[name]!.environment.SLIPWAY_REGISTRY_URL, name).toBe(
        `http://registry-guard:${guard.environment.SLIPWAY_REGISTRY_PORT}`,
      );
    }
    const env = services['registry-config']!.environment as Record<string, string>;
    const config = loadConfig({ ...env, SLIPWAY_DATA_DIR: '/var/lib/slipway' });
    expect(config.registry.upstreamUrl).toBe('http://127.0.0.1:5001');
    const generated = JSON.parse(registryConfiguration(config, '/var/lib/slipway/registry/token-issuer.crt'));
    expect(generated.http.addr).toBe('127.0.0.1:5001');
    expect(generated.http.addr).not.toBe(`${config.registry.host}:${config.registry.port}`);
    expect(registry.healthcheck.test.join(' ')).toContain(`http://${generated.http.addr}/v2/`);
    expect(guard.healthcheck.test.join(' ')).toContain(`http://127.0.0.1:${config.registry.port}/v2/`);
  });

  it('runs Redis with noeviction and AOF, and gates the api on a finished migration', () => {
    const text = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
    expect(text).toMatch(/--maxmemory-policy", "noeviction"/);
    expect(text).toMatch(/--appendonly", "yes"/);
    expect(text).toMatch(/migrate:\s*\n\s*condition: service_completed_successfully/);
    for (const service of ['postgres', 'redis', 'api', 'builder', 'deployer']) {
      expect(text, service).toMatch(new RegExp(`\\n  ${service}:[\\s\\S]*?healthcheck:`));
    }
  });

  it('shares the data dir between api, builder and deployer (uploads and artifacts live there)', () => {
    const text = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
    for (const service of ['api', 'builder', 'deployer']) {
      const block = text.split(new RegExp(`\\n  ${service}:\\n`))[1]!.split(/\n  [a-z]+:\n/)[0]!;
      expect(block, service).toContain('slipway-data:/var/lib/slipway');
    }
  });

  it('builds each Slipway service from its own Dockerfile target, running compiled code only', () => {
    const dockerfile = readFileSync(path.join(ROOT, 'infra/docker/Dockerfile'), 'utf8');
    const stages = [...dockerfile.matchAll(/^FROM \S+ AS (\S+)$/gm)].map((m) => m[1]);
    const packaged = /build\.mjs --package \/prod (.+)$/m.exec(dockerfile)?.[1]!.split(' ') ?? [];
    expect(dockerfile).toMatch(/^CMD \["node", "dist\/main\.js"\]$/m);
    expect(dockerfile).not.toMatch(/tsx/);
    const text = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
    expect(text).not.toMatch(/tsx|src\/main\.ts/);
    const targets = { migrate: 'cli', api: 'api', builder: 'builder', deployer: 'deployer', edge: 'edge' };
    for (const [service, target] of Object.entries(targets)) {
      const block = text.split(new RegExp(`\\n  ${service}:\\n`))[1]!.split(/\n  [a-z]+:\n/)[0]!;
      expect(block, service).toContain(`target: ${target}`);
      expect(stages, service).toContain(target);
      expect(packaged, service).toContain(target);
    }
  });

  it.each(Object.keys(REQUIRED))('refuses to start without %s, naming it', (name) => {
    const result = spawnSync(compose![0]!, [...compose!.slice(1), '-f', 'docker-compose.yml', 'config', '-q'], {
      cwd: ROOT,
      env: { ...withoutRequired(), ...REQUIRED, [name]: '' },
      encoding: 'utf8',
    });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain(name);
  });

  it('ships no default password: Postgres, the control-plane role and Redis take theirs from the required variables', () => {
    const { services } = resolved();
    const text = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
    expect(text).not.toMatch(/POSTGRES_PASSWORD: (?!\$\{)/);
    expect(text).not.toMatch(/postgres:\/\/[^:]+:(?!\$\{)[^@]*@/);
    expect(services.postgres!.environment.POSTGRES_PASSWORD).toBe(REQUIRED.SLIPWAY_POSTGRES_PASSWORD);
    for (const service of ['migrate', 'api', 'builder', 'deployer', 'edge']) {
      const env = services[service]!.environment;
      expect(env.DATABASE_URL, service).toBe(
        `postgres://slipway:${REQUIRED.SLIPWAY_DB_PASSWORD}@postgres:5432/slipway`,
      );
      expect(env.REDIS_URL, service).toBe(`redis://:${REQUIRED.SLIPWAY_REDIS_PASSWORD}@redis:6379/0`);
    }
    // The services never use the superuser.
    expect(JSON.stringify(services)).not.toContain(`:${REQUIRED.SLIPWAY_POSTGRES_PASSWORD}@`);
  });

  it('runs Redis with requirepass, and its health check authenticates', () => {
    const redis = resolved().services.redis!;
    const command = redis.command as string[];
    expect(command[command.indexOf('--requirepass') + 1]).toBe(REQUIRED.SLIPWAY_REDIS_PASSWORD);
    expect(redis.environment.REDISCLI_AUTH).toBe(REQUIRED.SLIPWAY_REDIS_PASSWORD);
  });

  it("makes the control-plane role CREATEDB CREATEROLE, not a superuser, and the hardened template with the code's statements", () => {
    const postgres = resolved().services.postgres!;
    expect(JSON.stringify(postgres.volumes)).toContain('/docker-entrypoint-initdb.d/');
    const init = readFileSync(path.join(ROOT, 'infra/postgres/init-slipway.sh'), 'utf8');
    expect(init).toMatch(/CREATE ROLE slipway LOGIN NOSUPERUSER CREATEDB CREATEROLE /);
    expect(init).toMatch(/IS_TEMPLATE true/);
    const squash = (sql: string) => sql.replace(/\s+/g, ' ').trim();
    for (const statement of CATALOG_HARDENING) expect(squash(init)).toContain(`${squash(statement)};`);
  });

  it('runs no service privileged; the workers get named capabilities only, after dropping all', () => {
    const { services } = resolved();
    for (const [name, service] of Object.entries(services)) expect(service.privileged ?? false, name).toBe(false);
    expect(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8')).not.toMatch(/privileged:\s*true/);
    for (const name of ['builder', 'deployer']) {
      const service = services[name]!;
      expect(service.cap_drop, name).toEqual(['ALL']);
      expect([...service.cap_add].sort(), name).toEqual([
        'CHOWN',
        'DAC_OVERRIDE',
        'FOWNER',
        'KILL',
        'NET_ADMIN',
        'SETGID',
        'SETPCAP',
        'SETUID',
        'SYS_ADMIN',
        'SYS_CHROOT',
      ]);
    }
    expect(services.builder!.security_opt).toEqual(['apparmor=unconfined', 'systempaths=unconfined']);
    // runc needs keyctl, which Docker's default seccomp profile refuses: the deployer alone goes without it.
    expect(services.deployer!.security_opt).toEqual([
      'apparmor=unconfined',
      'systempaths=unconfined',
      'seccomp=unconfined',
    ]);
    // Each granted capability is explained where it is granted.
    const text = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
    for (const cap of services.builder!.cap_add as string[]) expect(text, cap).toMatch(new RegExp(`- ${cap} # \\S`));
  });
});

describe('infra/docker/Dockerfile', () => {
  /** The Debian packages a stage's apt-get install lines name. */
  const installed = (stage: string) => {
    const dockerfile = readFileSync(path.join(ROOT, 'infra/docker/Dockerfile'), 'utf8');
    const block = dockerfile.split(new RegExp(`^FROM \\S+ AS ${stage}$`, 'm'))[1]!.split(/^FROM /m)[0]!;
    return [...block.matchAll(/apt-get install -y --no-install-recommends ([^\\\n]+)/g)].flatMap((m) =>
      m[1]!.trim().split(/\s+/),
    );
  };

  it('copies every workspace package.json before the frozen install, so each bundled service has its dependencies', () => {
    const dockerfile = readFileSync(path.join(ROOT, 'infra/docker/Dockerfile'), 'utf8');
    const beforeInstall = dockerfile.split('RUN pnpm install --frozen-lockfile')[0]!;
    const copied = new Set([...beforeInstall.matchAll(/^COPY (\S+)\/package\.json /gm)].map((m) => m[1]));
    const packages = ['libs', 'services'].flatMap((dir) =>
      readdirSync(path.join(ROOT, dir))
        .filter((name) => existsSync(path.join(ROOT, dir, name, 'package.json')))
        // Workspace members only: the agent server host has its own lockfile, copied with services/.
        .filter((name) => readFileSync(path.join(ROOT, dir, name, 'package.json'), 'utf8').includes('"@slipway/'))
        .map((name) => `${dir}/${name}`),
    );
    expect(packages.length).toBeGreaterThan(10);
    expect(packages.filter((p) => !copied.has(p))).toEqual([]);
  });

  it("gives the deployer what the embedded container runtime runs: runc, skopeo, umoci, catatonit (at Debian's path)", () => {
    expect(installed('deployer')).toEqual(
      expect.arrayContaining(['bubblewrap', 'nftables', 'iproute2', 'runc', 'skopeo', 'umoci', 'catatonit']),
    );
    // The init shown to images without one is Debian's catatonit binary.
    expect(CATATONIT).toBe('/usr/bin/catatonit');
    // Only the deployer runs images: the builder gets none of it.
    expect(installed('builder')).not.toContain('runc');
  });
});
