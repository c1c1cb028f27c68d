import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './index.js';

const key = () => randomBytes(32).toString('base64');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'slipway-config-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** The error `fn` throws, asserted to be a ConfigError. */
function configErrorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}

describe('loadConfig defaults', () => {
  it('fills every default from an (almost) empty environment', () => {
    const secret = key();
    const config = loadConfig({ SLIPWAY_SECRETS_KEY: secret });
    expect(config).toMatchObject({
      nodeEnv: 'development',
      host: '127.0.0.1',
      port: 8124,
      publicUrl: 'http://127.0.0.1:8124',
      databaseUrl: 'postgres://postgres:postgres@127.0.0.1:5432/slipway',
      redisUrl: 'redis://127.0.0.1:6379/0',
      queuePrefix: 'slipway',
      bootstrapApiKey: null,
      previousSecretsKeys: [],
      dataDir: path.resolve('./.slipway'),
      logLevel: 'info',
      bodyLimitBytes: 1024 * 1024,
      jwt: null,
      shutdownTimeoutMs: 10_000,
    });
    expect(path.isAbsolute(config.dataDir)).toBe(true);
    expect(config.secretsKey.origin).toBe('env');
    expect(config.secretsKey.key.equals(Buffer.from(secret, 'base64'))).toBe(true);
  });

  it('converts and applies what the environment sets', () => {
    const previous = [key(), key()];
    const config = loadConfig({
      NODE_ENV: 'production',
      PORT: '9000',
      HOST: '0.0.0.0',
      SLIPWAY_PUBLIC_URL: 'https://slipway.example.com/',
      SLIPWAY_SECRETS_KEY: key(),
      SLIPWAY_PREVIOUS_SECRETS_KEYS: ` ${previous[0]}, ${previous[1]} `,
      SLIPWAY_DATA_DIR: dir,
      SLIPWAY_BODY_LIMIT_BYTES: '2048',
      SLIPWAY_JWT_ISSUER: 'https://issuer.example.com',
      SLIPWAY_JWT_JWKS_URL: 'https://issuer.example.com/.well-known/jwks.json',
      UNRELATED_VARIABLE: 'ignored',
    });
    expect(config).toMatchObject({
      nodeEnv: 'production',
      port: 9000,
      host: '0.0.0.0',
      publicUrl: 'https://slipway.example.com',
      dataDir: dir,
      bodyLimitBytes: 2048,
      jwt: {
        issuer: 'https://issuer.example.com',
        jwksUrl: 'https://issuer.example.com/.well-known/jwks.json',
        audience: null,
      },
    });
    // Every asymmetric algorithm by default, and a day's maximum token age.
    expect(config.jwt).toMatchObject({
      algorithms: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'],
      maxTokenAgeSeconds: 86_400,
    });
    expect(config.previousSecretsKeys.map((b) => b.toString('base64'))).toEqual(previous);
  });
});

describe('security settings', () => {
  it('has production-sane request budgets and trusts only a loopback proxy by default', () => {
    const config = loadConfig({ SLIPWAY_SECRETS_KEY: key(), SLIPWAY_DATA_DIR: dir });
    expect(config.rateLimit).toEqual({
      windowSeconds: 60,
      perKey: 1_200,
      perListenerAgent: 3_000,
      perAddress: 600,
      authFailures: 30,
      authFailureWindowSeconds: 900,
    });
    expect(config.trustProxy).toBe('loopback');
  });

  it('takes budgets (0 = off), JWT settings and the proxy trust from the environment', () => {
    const config = loadConfig({
      SLIPWAY_SECRETS_KEY: key(),
      SLIPWAY_DATA_DIR: dir,
      SLIPWAY_RATE_LIMIT_WINDOW_SECONDS: '10',
      SLIPWAY_RATE_LIMIT_PER_KEY: '5',
      SLIPWAY_RATE_LIMIT_PER_LISTENER_AGENT: '0',
      SLIPWAY_RATE_LIMIT_PER_ADDRESS: '7',
      SLIPWAY_RATE_LIMIT_AUTH_FAILURES: '3',
      SLIPWAY_RATE_LIMIT_AUTH_FAILURE_WINDOW_SECONDS: '120',
      SLIPWAY_JWT_ISSUER: 'https://issuer.example.com',
      SLIPWAY_JWT_JWKS_URL: 'https://issuer.example.com/jwks.json',
      SLIPWAY_JWT_AUDIENCE: 'slipway',
      SLIPWAY_JWT_ALGORITHMS: ' ES256 , EdDSA ',
      SLIPWAY_JWT_MAX_AGE_SECONDS: '600',
      SLIPWAY_TRUST_PROXY: '2',
    });
    expect(config.rateLimit).toEqual({
      windowSeconds: 10,
      perKey: 5,
      perListenerAgent: 0,
      perAddress: 7,
      authFailures: 3,
      authFailureWindowSeconds: 120,
    });
    expect(config.jwt).toMatchObject({ audience: 'slipway', algorithms: ['ES256', 'EdDSA'], maxTokenAgeSeconds: 600 });
    expect(config.trustProxy).toBe(2);
    expect(
      loadConfig({ SLIPWAY_SECRETS_KEY: key(), SLIPWAY_DATA_DIR: dir, SLIPWAY_TRUST_PROXY: 'false' }).trustProxy,
    ).toBe(false);
    expect(
      loadConfig({ SLIPWAY_SECRETS_KEY: key(), SLIPWAY_DATA_DIR: dir, SLIPWAY_TRUST_PROXY: 'loopback, 10.0.0.0/8' })
        .trustProxy,
    ).toBe('loopback, 10.0.0.0/8');
  });

  it.each([
    ['SLIPWAY_JWT_ALGORITHMS', 'HS256'],
    ['SLIPWAY_JWT_ALGORITHMS', 'RS256,none'],
    ['SLIPWAY_JWT_ALGORITHMS', ','],
    ['SLIPWAY_JWT_MAX_AGE_SECONDS', '5'],
    ['SLIPWAY_RATE_LIMIT_PER_KEY', '-1'],
    ['SLIPWAY_RATE_LIMIT_WINDOW_SECONDS', '0'],
  ])('refuses %s=%s', (name, value) => {
    const err = configErrorOf(() => loadConfig({ SLIPWAY_SECRETS_KEY: key(), SLIPWAY_DATA_DIR: dir, [name]: value }));
    expect(err.problems).toHaveLength(1);
    expect(err.problems[0]).toContain(name);
  });
});

describe('loadConfig failures', () => {
  it('lists every bad key at once', () => {
    const err = configErrorOf(() =>
      loadConfig({
        PORT: 'abc',
        DATABASE_URL: 'mysql://x',
        LOG_LEVEL: 'loud',
        SLIPWAY_SECRETS_KEY: 'short',
        SLIPWAY_DATA_DIR: dir,
      }),
    );
    expect(err.problems).toHaveLength(4);
    for (const name of ['PORT', 'DATABASE_URL', 'LOG_LEVEL', 'SLIPWAY_SECRETS_KEY']) {
      expect(
        err.problems.filter((p) => p.includes(name)),
        name,
      ).toHaveLength(1);
      expect(err.message).toContain(name);
    }
  });

  it.each([
    ['SLIPWAY_SECRETS_KEY', randomBytes(16).toString('base64'), /32-byte/],
    ['SLIPWAY_SECRETS_KEY', key().replace(/.$/, '!'), /32-byte/],
    ['SLIPWAY_PREVIOUS_SECRETS_KEYS', `${key()},${randomBytes(8).toString('base64')}`, /32-byte/],
    ['PORT', '70000', /PORT/],
    ['REDIS_URL', 'http://127.0.0.1:6379', /REDIS_URL/],
    ['SLIPWAY_QUEUE_PREFIX', 'has:colon', /SLIPWAY_QUEUE_PREFIX/],
    ['SLIPWAY_BODY_LIMIT_BYTES', '10', /SLIPWAY_BODY_LIMIT_BYTES/],
    ['NODE_ENV', 'staging', /NODE_ENV/],
    ['SLIPWAY_SANDBOX_SUBNET', '10.213.0.0/30', /prefix of 8 to 29/],
    ['SLIPWAY_SANDBOX_SUBNET', 'fd00::/64', /SLIPWAY_SANDBOX_SUBNET/],
    ['SLIPWAY_SANDBOX_ALLOW_CIDRS', '10.1.0.0/16,fd00::/8', /no IPv6 route/],
    ['SLIPWAY_SANDBOX_ALLOW_CIDRS', '10.1.0.0/33', /SLIPWAY_SANDBOX_ALLOW_CIDRS/],
  ])('rejects a bad %s', (name, value, message) => {
    const err = configErrorOf(() => loadConfig({ SLIPWAY_SECRETS_KEY: key(), SLIPWAY_DATA_DIR: dir, [name]: value }));
    expect(err.problems).toHaveLength(1);
    expect(err.problems[0]).toMatch(message);
  });

  it('takes the sandbox pool and the allow-list (default: 10.213.0.0/16, nothing allowed)', () => {
    expect(loadConfig({ SLIPWAY_SECRETS_KEY: key(), SLIPWAY_DATA_DIR: dir }).sandbox).toMatchObject({
      subnet: '10.213.0.0/16',
      allowCidrs: [],
    });
    const config = loadConfig({
      SLIPWAY_SECRETS_KEY: key(),
      SLIPWAY_DATA_DIR: dir,
      SLIPWAY_SANDBOX_SUBNET: '10.50.0.0/20',
      SLIPWAY_SANDBOX_ALLOW_CIDRS: ' 10.1.0.0/16, 192.168.1.5 ',
    });
    expect(config.sandbox).toMatchObject({ subnet: '10.50.0.0/20', allowCidrs: ['10.1.0.0/16', '192.168.1.5'] });
  });

  it("takes the DNS relay's bounds (default 64 per sandbox, 1024 in all, 16 TCP connections per sandbox) and refuses 0", () => {
    expect(loadConfig({ SLIPWAY_SECRETS_KEY: key(), SLIPWAY_DATA_DIR: dir }).sandbox.dns).toEqual({
      servers: [],
      maxInflightPerSandbox: 64,
      maxInflight: 1024,
      maxTcpClientsPerSandbox: 16,
    });
    const env = {
      SLIPWAY_DNS_MAX_INFLIGHT_PER_SANDBOX: '8',
      SLIPWAY_DNS_MAX_INFLIGHT: '100',
      SLIPWAY_DNS_MAX_TCP_CLIENTS_PER_SANDBOX: '2',
    };
    expect(loadConfig({ SLIPWAY_SECRETS_KEY: key(), SLIPWAY_DATA_DIR: dir, ...env }).sandbox.dns).toMatchObject({
      maxInflightPerSandbox: 8,
      maxInflight: 100,
      maxTcpClientsPerSandbox: 2,
    });
    const err = configErrorOf(() =>
      loadConfig({ SLIPWAY_SECRETS_KEY: key(), SLIPWAY_DATA_DIR: dir, SLIPWAY_DNS_MAX_INFLIGHT: '0' }),
    );
    expect(err.problems).toEqual([expect.stringMatching(/SLIPWAY_DNS_MAX_INFLIGHT/)]);
  });

  it("takes the sandboxes' resolvers (none: the host's), each `ip` (port 53) or `ip:port`, and refuses a name or a bad port", () => {
    const servers = (value: string) =>
      loadConfig({ SLIPWAY_SECRETS_KEY: key(), SLIPWAY_DATA_DIR: dir, SLIPWAY_SANDBOX_DNS_SERVERS: value }).sandbox.dns
        .servers;
    expect(servers(' 10.0.0.53, 127.0.0.1:5353 ,[fd00::53]:54,fd00::1')).toEqual([
      { host: '10.0.0.53', port: 53 },
      { host: '127.0.0.1', port: 5353 },
      { host: 'fd00::53', port: 54 },
      { host: 'fd00::1', port: 53 },
    ]);
    for (const bad of ['dns.example', '10.0.0.53:0', '10.0.0.53:70000', '10.0.0.53:', 'fd00::53:54x']) {
      const err = configErrorOf(() =>
        loadConfig({ SLIPWAY_SECRETS_KEY: key(), SLIPWAY_DATA_DIR: dir, SLIPWAY_SANDBOX_DNS_SERVERS: bad }),
      );
      expect(err.problems, bad).toEqual([expect.stringMatching(/SLIPWAY_SANDBOX_DNS_SERVERS/)]);
    }
  });

  it('requires the JWKS URL with the JWT issuer', () => {
    const err = configErrorOf(() =>
      loadConfig({
        SLIPWAY_SECRETS_KEY: key(),
        SLIPWAY_DATA_DIR: dir,
        SLIPWAY_JWT_ISSUER: 'https://issuer.example.com',
      }),
    );
    expect(err.problems.join()).toMatch(/SLIPWAY_JWT_JWKS_URL/);
  });

  it('requires SLIPWAY_SECRETS_KEY in production and writes no key file', () => {
    const err = configErrorOf(() => loadConfig({ NODE_ENV: 'production', SLIPWAY_DATA_DIR: dir }));
    expect(err.problems).toEqual(['SLIPWAY_SECRETS_KEY is required when NODE_ENV=production']);
    expect(() => statSync(path.join(dir, 'secrets.key'))).toThrow(/ENOENT/);
  });
});

describe('the development secrets key', () => {
  it('is generated once into the data dir (0600) and read back afterwards', () => {
    const dataDir = path.join(dir, 'nested', 'data');
    const first = loadConfig({ NODE_ENV: 'development', SLIPWAY_DATA_DIR: dataDir });
    expect(first.secretsKey.origin).toBe('generated');
    expect(first.secretsKey.key).toHaveLength(32);

    const file = path.join(dataDir, 'secrets.key');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(dataDir).mode & 0o077).toBe(0);
    expect(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64').equals(first.secretsKey.key)).toBe(true);

    const second = loadConfig({ NODE_ENV: 'test', SLIPWAY_DATA_DIR: dataDir });
    expect(second.secretsKey.origin).toBe('file');
    expect(second.secretsKey.key.equals(first.secretsKey.key)).toBe(true);
  });

  it('prefers the environment over the file', () => {
    loadConfig({ SLIPWAY_DATA_DIR: dir });
    const secret = key();
    const config = loadConfig({ SLIPWAY_DATA_DIR: dir, SLIPWAY_SECRETS_KEY: secret });
    expect(config.secretsKey).toMatchObject({ origin: 'env' });
    expect(config.secretsKey.key.toString('base64')).toBe(secret);
  });

  it('refuses a key file that does not hold a 32-byte key', () => {
    writeFileSync(path.join(dir, 'secrets.key'), randomBytes(8).toString('base64'));
    const err = configErrorOf(() => loadConfig({ SLIPWAY_DATA_DIR: dir }));
    expect(err.problems[0]).toMatch(/secrets\.key does not hold a 32-byte base64 key/);
  });
});

describe('the returned config', () => {
  it('is deeply frozen', () => {
    const config = loadConfig({
      SLIPWAY_SECRETS_KEY: key(),
      SLIPWAY_DATA_DIR: dir,
      SLIPWAY_JWT_ISSUER: 'https://issuer.example.com',
      SLIPWAY_JWT_JWKS_URL: 'https://issuer.example.com/jwks',
    }) as any;
    expect(Object.isFrozen(config)).toBe(true);
    // ES modules are strict: writes to a frozen object throw instead of failing silently.
    expect(() => {
      config.port = 1;
    }).toThrow(TypeError);
    expect(() => {
      config.secretsKey.origin = 'file';
    }).toThrow(TypeError);
    expect(() => {
      config.jwt.issuer = 'https://evil.example.com';
    }).toThrow(TypeError);
    expect(() => config.previousSecretsKeys.push(Buffer.alloc(32))).toThrow(TypeError);
    expect(config.port).toBe(8124);
  });

  it('does not touch process.env', () => {
    const before = { ...process.env };
    loadConfig({ SLIPWAY_SECRETS_KEY: key(), SLIPWAY_DATA_DIR: dir, PORT: '1234' });
    expect(process.env).toEqual(before);
  });
});

describe('process runtime hosts', () => {
  const runtime = (env: Record<string, string>) =>
    loadConfig({ SLIPWAY_SECRETS_KEY: key(), SLIPWAY_DATA_DIR: dir, ...env }).runtime;

  it('puts the bind host in URLs unless it binds all interfaces', () => {
    expect(runtime({})).toMatchObject({ host: '127.0.0.1', publicHost: '127.0.0.1' });
    expect(runtime({ SLIPWAY_RUNTIME_HOST: '10.1.2.3' }).publicHost).toBe('10.1.2.3');
    expect(runtime({ SLIPWAY_RUNTIME_HOST: '0.0.0.0' }).publicHost).toBe('127.0.0.1');
    expect(
      runtime({ SLIPWAY_RUNTIME_HOST: '0.0.0.0', SLIPWAY_RUNTIME_PUBLIC_HOST: 'agents.example.com' }).publicHost,
    ).toBe('agents.example.com');
  });
});

describe('the image registry settings', () => {
  it('default to a registry on 127.0.0.1:8130 under the data dir, with the api as its realm', () => {
    const config = loadConfig({ SLIPWAY_DATA_DIR: dir, SLIPWAY_SECRETS_KEY: key(), PORT: '9000' });
    expect(config.registry).toEqual({
      mode: 'auto',
      host: '127.0.0.1',
      port: 8130,
      publicAddress: '127.0.0.1:8130',
      internalUrl: 'http://127.0.0.1:8130',
      storageDir: path.join(dir, 'registry'),
      signingKeyFile: path.join(dir, 'registry-signing.key'),
      realm: 'http://127.0.0.1:9000/v2/registry/token',
      eventsUrl: 'http://127.0.0.1:9000/v2/registry/events',
      pushTokenTtlSeconds: 3600,
      tokenTtlSeconds: 300,
      binary: 'docker-registry',
      upstreamUrl: null,
    });
    expect(config.sourceNames).toBe('canonical');
    expect(config.quotas.registryBytes).toBe(10 * 1024 ** 3);
    expect(config.quotas.traceRetentionDays).toBe(14);
  });

  it('a wildcard host is reached at loopback; explicit addresses win; bad values are refused', () => {
    const config = loadConfig({
      SLIPWAY_DATA_DIR: dir,
      SLIPWAY_SECRETS_KEY: key(),
      SLIPWAY_REGISTRY_HOST: '0.0.0.0',
      SLIPWAY_REGISTRY_PUBLIC_ADDRESS: 'registry.example:443',
      SLIPWAY_PUBLIC_URL: 'https://slipway.example/',
      SLIPWAY_SOURCE_NAMES: 'hosted',
    });
    expect(config.registry).toMatchObject({
      internalUrl: 'http://127.0.0.1:8130',
      publicAddress: 'registry.example:443',
      realm: 'https://slipway.example/v2/registry/token',
    });
    expect(config.sourceNames).toBe('hosted');
    const err = configErrorOf(() =>
      loadConfig({
        SLIPWAY_DATA_DIR: dir,
        SLIPWAY_SECRETS_KEY: key(),
        SLIPWAY_PUSH_TOKEN_TTL_SECONDS: '5',
        SLIPWAY_SOURCE_NAMES: 'other',
        SLIPWAY_REGISTRY_PUBLIC_ADDRESS: 'http://x/y',
      }),
    );
    expect(err.message).toMatch(/SLIPWAY_PUSH_TOKEN_TTL_SECONDS/);
    expect(err.message).toMatch(/SLIPWAY_SOURCE_NAMES/);
    expect(err.message).toMatch(/SLIPWAY_REGISTRY_PUBLIC_ADDRESS/);
  });
});
