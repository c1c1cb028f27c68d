import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

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

describe.runIf(compose || required)('docker-compose.yml', () => {
  const run = (...args: string[]) =>
    execFileSync(compose![0]!, [...compose!.slice(1), '-f', 'docker-compose.yml', ...args], {
      cwd: ROOT,
      env: { ...process.env, SLIPWAY_SECRETS_KEY: 'c2xpcHdheS10ZXN0LWtleS0zMi1ieXRlcy1sb25nISE=' },
      encoding: 'utf8',
    });

  it('passes `compose config`', () => {
    expect(compose, 'docker compose / docker-compose must be installed').not.toBeNull();
    run('config', '-q');
  });

  it('defines postgres, redis, a one-shot migrate, the api, the two workers and the image registry', () => {
    expect(run('config', '--services').trim().split('\n').sort()).toEqual([
      'api',
      'builder',
      'deployer',
      'migrate',
      'postgres',
      'redis',
      'registry',
      'registry-config',
    ]);
  });

  it('runs registry:2 on the configuration the cli generates into the shared data dir', () => {
    const text = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
    expect(text).toMatch(/registry-config:[\s\S]*?command: \["node", "dist\/main\.js", "registry-config"\]/);
    expect(text).toMatch(/\n  registry:\n    image: registry:2\n    command: \["serve", "\/var\/lib\/slipway\/registry\/config\.yml"\]/);
    expect(text).toMatch(/registry-config:\n\s*condition: service_completed_successfully/);
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
    const targets = { migrate: 'cli', api: 'api', builder: 'builder', deployer: 'deployer' };
    for (const [service, target] of Object.entries(targets)) {
      const block = text.split(new RegExp(`\\n  ${service}:\\n`))[1]!.split(/\n  [a-z]+:\n/)[0]!;
      expect(block, service).toContain(`target: ${target}`);
      expect(stages, service).toContain(target);
      expect(packaged, service).toContain(target);
    }
  });

  it('refuses to start without SLIPWAY_SECRETS_KEY', () => {
    const result = spawnSync(compose![0]!, [...compose!.slice(1), '-f', 'docker-compose.yml', 'config', '-q'], {
      cwd: ROOT,
      env: { ...process.env, SLIPWAY_SECRETS_KEY: '' },
      encoding: 'utf8',
    });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(/SLIPWAY_SECRETS_KEY/);
  });
});
