import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '@slipway/config';
import { secretsCodec } from '@slipway/crypto';
import { DeploymentCredentialStore, dropDeploymentDatabase } from '@slipway/db';
import { deploymentDatabaseName } from '@slipway/domain';
import { createLogger } from '@slipway/logging';
import { deploymentRedisUser, startupMessage } from '@slipway/runtime';
import {
  DeploymentDataAccess,
  type DataEnvironment,
} from '../../services/deployer/src/provisioning/deployment-data-access.js';
import { resp, sendInPieces, whoamiAnswer, whoamiProbe } from '../support/resp-probe.js';
import { dropDeploymentStores } from '../support/deployment-stores.js';
import { eventually } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * A deployment's own Postgres role and Redis ACL user, their sealed passwords and the fronts
 * (issue 7 items 4 and 5), against the real Postgres and Redis of this machine. Deployments are
 * created through the api; their stores are provisioned by the deployer's DeploymentDataAccess
 * directly (no job queue needed). Everything made here is dropped in afterAll.
 */
let api: TestApi;
let access: DeploymentDataAccess;
const made: Array<{ id: string; database: string }> = [];
const clients: Array<{ quit?: () => unknown; end?: () => unknown }> = [];
const log = createLogger({ name: 'data-access-test', level: 'silent' });

async function createDeployment(name: string): Promise<{ id: string; database: string }> {
  const res = await api.http.post('/v2/deployments', {
    name,
    source: 'internal_source',
    source_config: { deployment_type: 'dev' },
    source_revision_config: {},
  });
  expect(res.status, res.text).toBe(201);
  const d = { id: res.body.id as string, database: deploymentDatabaseName(name, res.body.id) };
  made.push(d);
  return d;
}

function redisClient(uri: string): Redis {
  const client = new Redis(uri, { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
  client.on('error', () => undefined);
  clients.push(client);
  return client;
}

function pgClient(uri: string, changes: { database?: string; user?: string; password?: string } = {}): pg.Client {
  const u = new URL(uri);
  if (changes.database) u.pathname = `/${changes.database}`;
  if (changes.user) u.username = changes.user;
  if (changes.password !== undefined) u.password = changes.password;
  const client = new pg.Client({ connectionString: u.toString(), connectionTimeoutMillis: 5_000 });
  client.on('error', () => undefined);
  clients.push(client);
  return client;
}

/** Sends raw RESP commands on a fresh connection and returns the first `replies` reply lines. */
function rawRedis(port: number, payload: string, replies: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString('utf8');
      const lines = text.split('\r\n').filter(Boolean);
      if (lines.length >= replies) {
        socket.destroy();
        resolve(lines.slice(0, replies));
      }
    });
    socket.on('error', reject);
    socket.write(payload);
  });
}

const passwordOf = (uri: string) => decodeURIComponent(new URL(uri).password);

let a: { id: string; database: string };
let b: { id: string; database: string };
let envA: DataEnvironment;
let envB: DataEnvironment;

beforeAll(async () => {
  api = await startTestApi();
  access = new DeploymentDataAccess(api.config, api.dataSource, secretsCodec(api.config), log);
  await access.start();
  a = await createDeployment('data-alpha');
  b = await createDeployment('data-beta');
  envA = await access.environment(a.id, a.database);
  envB = await access.environment(b.id, b.database);
}, 60_000);

afterAll(async () => {
  await Promise.allSettled(clients.map((c) => (c.quit ? c.quit() : c.end?.())));
  await access?.close();
  if (api) await dropDeploymentStores(api.config, made);
  await api?.close();
});

describe('trust detection', () => {
  it('is reported by /readyz as the deployer sees it', async () => {
    const report = await access.start();
    const ready = await api.http.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.details.data_access).toEqual({
      postgres_passwordless: report.postgresPasswordless,
      redis_default_user_open: report.redisDefaultOpen,
      fronts_active: access.frontsActive,
    });
    // This machine's servers answer, so neither is unknown.
    expect(typeof report.postgresPasswordless).toBe('boolean');
    expect(typeof report.redisDefaultOpen).toBe('boolean');
  });
});

describe("a deployment's Redis user", () => {
  it('is named in REDIS_URI, works under its own prefix and nowhere else', async () => {
    expect(new URL(envA.env.REDIS_URI).username).toBe(deploymentRedisUser(a.id));
    expect(envA.env.REDIS_URI).not.toContain(api.config.redisUrl);
    const redis = redisClient(envA.env.REDIS_URI);
    await redis.connect();
    const own = `${envA.env.REDIS_PREFIX}:greeting`;
    expect(await redis.set(own, 'hello')).toBe('OK');
    expect(await redis.get(own)).toBe('hello');
    await expect(redis.set('unprefixed', 'x')).rejects.toThrow(/NOPERM/);
    await expect(redis.get(`${envB.env.REDIS_PREFIX}:greeting`)).rejects.toThrow(/NOPERM/);
    await expect(redis.get(`${api.config.queuePrefix}:builds:id`)).rejects.toThrow(/NOPERM/);
  });

  it('may not run administrative or dangerous commands', async () => {
    const redis = redisClient(envA.env.REDIS_URI);
    await redis.connect();
    for (const command of [
      ['FLUSHALL'],
      ['FLUSHDB'],
      ['CONFIG', 'GET', '*'],
      ['KEYS', '*'],
      ['SCAN', '0'],
      ['EVAL', 'return 1', '0'],
      ['SCRIPT', 'FLUSH'],
      ['DEBUG', 'SLEEP', '0'],
      ['ACL', 'LIST'],
      ['MONITOR'],
      ['CLIENT', 'KILL', 'TYPE', 'normal'],
      ['SHUTDOWN'],
      ['SAVE'],
      ['BGSAVE'],
      ['REPLICAOF', 'NO', 'ONE'],
      ['MODULE', 'LIST'],
    ]) {
      await expect(redis.call(command[0]!, ...command.slice(1)), command.join(' ')).rejects.toThrow(
        /NOPERM|DEBUG command not allowed/,
      );
    }
    // Its own key survived all of it.
    expect(await redis.get(`${envA.env.REDIS_PREFIX}:greeting`)).toBe('hello');
  });

  it('cannot switch to another user through the front (AUTH default, HELLO AUTH, RESET), nor skip authenticating', async () => {
    const front = Number(new URL(envA.env.REDIS_URI).port);
    if (!access.frontsActive.redis) {
      // Redis demands passwords here: REDIS_URI names the server itself and its own ACLs apply.
      expect(front).toBe(Number(new URL(api.config.redisUrl).port || 6379));
      return;
    }
    const redis = redisClient(envA.env.REDIS_URI);
    await redis.connect();
    await expect(redis.call('AUTH', 'default', '')).rejects.toThrow(/slipway-front:refused/i);
    await expect(redis.call('AUTH', 'anything')).rejects.toThrow(/slipway-front:refused/i);
    await expect(redis.call('HELLO', '2', 'AUTH', 'default', 'x')).rejects.toThrow(/slipway-front:refused/i);
    await expect(redis.call('RESET')).rejects.toThrow(/slipway-front:refused/i);
    // Still the deployment's user: its prefix works, others do not.
    expect(await redis.get(`${envA.env.REDIS_PREFIX}:greeting`)).toBe('hello');
    await expect(redis.flushall()).rejects.toThrow(/NOPERM/);
    // Another deployment's credentials do not open this front either.
    await expect(redis.call('AUTH', deploymentRedisUser(b.id), passwordOf(envB.env.REDIS_URI))).rejects.toThrow(
      /slipway-front:refused/i,
    );

    // Without AUTH nothing runs; pipelined replies stay in order.
    const [noAuth, ping] = await rawRedis(front, '*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n', 2);
    expect(noAuth).toMatch(/NOAUTH/);
    expect(ping).toMatch(/NOAUTH/);
    const user = deploymentRedisUser(a.id);
    const password = passwordOf(envA.env.REDIS_URI);
    const auth = `*3\r\n$4\r\nAUTH\r\n$${user.length}\r\n${user}\r\n$${password.length}\r\n${password}\r\n`;
    const [ok, flush, pong] = await rawRedis(front, `${auth}*1\r\n$8\r\nFLUSHALL\r\n*1\r\n$4\r\nPING\r\n`, 3);
    expect([ok, pong]).toEqual(['+OK', '+PONG']);
    expect(flush).toMatch(/NOPERM/);
    // An inline command is read the same way.
    expect(await rawRedis(front, 'AUTH default x\r\n', 1)).toEqual([expect.stringMatching(/slipway-front:refused/i)]);
  });
});

describe('the Redis front reads every command as the server does', () => {
  const ownAuth = () => resp('AUTH', deploymentRedisUser(a.id), passwordOf(envA.env.REDIS_URI));
  let probes = 0;
  /** Sends `pieces` after the deployment's own AUTH, then asks who the connection is. */
  async function whoAfter(pieces: Buffer[], split = false): Promise<{ user?: string; error?: string } | undefined> {
    const nonce = `probe-${++probes}-${randomBytes(4).toString('hex')}`;
    let all = [ownAuth(), ...pieces, whoamiProbe(nonce)];
    if (split) all = [...Buffer.concat(all)].map((byte) => Buffer.from([byte]));
    const { text } = await sendInPieces(Number(new URL(envA.env.REDIS_URI).port), all, nonce);
    return whoamiAnswer(text, nonce);
  }
  const own = () => ({ user: deploymentRedisUser(a.id) });

  it('runs on this machine (Redis lets the default user in without a password)', () => {
    expect(access.frontsActive.redis).toBe(true);
  });

  it("HELLO 3 AUTH <own> <password> AUTH default x: refused, still the deployment's user", async () => {
    const hello = resp(
      'HELLO',
      '3',
      'AUTH',
      deploymentRedisUser(a.id),
      passwordOf(envA.env.REDIS_URI),
      'AUTH',
      'default',
      'x',
    );
    expect(await whoAfter([hello])).toEqual(own());
  });

  it('inline "AUTH" default x (double quotes, and \\x escapes): refused', async () => {
    expect(await whoAfter([Buffer.from('"AUTH" default x\r\n')])).toEqual(own());
    expect(await whoAfter([Buffer.from('"\\x41UTH" "default" ""\r\n')])).toEqual(own());
    expect(await whoAfter([Buffer.from('a"uth" default x\n')])).toEqual(own());
  });

  it("inline 'AUTH' default x (single quotes): refused", async () => {
    expect(await whoAfter([Buffer.from("'AUTH' 'default' 'x'\r\n")])).toEqual(own());
  });

  it('pipelined AUTHs in one write (RESP and inline, NUL-suffixed names, RESET, HELLO SETNAME): all refused', async () => {
    const pipelined = Buffer.concat([
      resp('AUTH', 'default', 'x'),
      resp('AUTH', 'x'),
      resp('AUTH\0junk', 'default', 'x'),
      resp('HELLO', '2', 'SETNAME', 'n', 'AUTH', 'default', 'x'),
      resp('hello', '3', 'auth\0x', 'default', 'x'),
      resp('AUTH', deploymentRedisUser(b.id), passwordOf(envB.env.REDIS_URI)),
      resp('RESET'),
      Buffer.from('AUTH default x\r\nauth "default" \'x\'\n'),
    ]);
    expect(await whoAfter([pipelined])).toEqual(own());
  });

  it('every byte in its own packet: still read as commands, the switch still refused', async () => {
    const attack = Buffer.concat([
      resp('HELLO', '3', 'AUTH', deploymentRedisUser(a.id), passwordOf(envA.env.REDIS_URI), 'AUTH', 'default', 'x'),
      Buffer.from('"AUTH" default x\r\n'),
    ]);
    expect(await whoAfter([attack], true)).toEqual(own());
  });

  it('an absurd bulk length is refused at once (nothing awaited), a large value streams through', async () => {
    const port = Number(new URL(envA.env.REDIS_URI).port);
    const refused = await sendInPieces(
      port,
      [ownAuth(), Buffer.from('*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$99999999999\r\n')],
      'never',
    );
    expect(refused.closed).toBe(true);
    expect(refused.text).toMatch(/protocol-error:invalid-bulk-length/);
    const redis = redisClient(envA.env.REDIS_URI);
    await redis.connect();
    const big = randomBytes(3 * 1024 * 1024);
    expect(await redis.set(`${envA.env.REDIS_PREFIX}:big`, big)).toBe('OK');
    expect((await redis.getBuffer(`${envA.env.REDIS_PREFIX}:big`))!.equals(big)).toBe(true);
    // A large AUTH cannot be the deployment's own: refused as a whole, the connection goes on.
    await expect(redis.call('AUTH', 'default', 'x'.repeat(100_000))).rejects.toThrow(/slipway-front:refused/i);
    expect(await redis.call('ACL', 'WHOAMI')).toBe(deploymentRedisUser(a.id));
  });
});

describe("a deployment's Postgres role", () => {
  it('reaches its own database with DATABASE_URI and nothing else', async () => {
    const own = pgClient(envA.env.DATABASE_URI);
    await own.connect();
    await own.query('CREATE TABLE notes (id int)');
    expect((await own.query('SELECT current_user AS u, current_database() AS d')).rows[0]).toEqual({
      u: a.database,
      d: a.database,
    });
    const [role] = await api.dataSource.query(
      `SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication FROM pg_roles WHERE rolname = $1`,
      [a.database],
    );
    expect(role).toEqual({ rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolreplication: false });
    // The control plane's database and another deployment's: refused whichever way it connects.
    await expect(pgClient(envA.env.DATABASE_URI, { database: api.database.name }).connect()).rejects.toThrow();
    await expect(pgClient(envA.env.DATABASE_URI, { database: b.database }).connect()).rejects.toThrow();
    const direct = (database: string) => {
      const u = new URL(api.config.databaseUrl);
      u.username = a.database;
      u.password = passwordOf(envA.env.DATABASE_URI);
      u.pathname = `/${database}`;
      return pgClient(u.toString());
    };
    await expect(direct(api.database.name).connect()).rejects.toThrow(/permission denied|CONNECT privilege/);
    await expect(direct(b.database).connect()).rejects.toThrow(/permission denied|CONNECT privilege/);
  });

  it('through the front: a wrong password, another role or the superuser is refused', async () => {
    if (!access.frontsActive.postgres) return; // Postgres demands passwords here: no front in between.
    await expect(pgClient(envA.env.DATABASE_URI, { password: 'wrong' }).connect()).rejects.toThrow(
      /password authentication failed/,
    );
    await expect(
      pgClient(envA.env.DATABASE_URI, {
        user: b.database,
        password: passwordOf(envB.env.DATABASE_URI),
        database: b.database,
      }).connect(),
    ).rejects.toThrow(/Only role/);
    await expect(pgClient(envA.env.DATABASE_URI, { user: 'postgres', database: 'postgres' }).connect()).rejects.toThrow(
      /Only role/,
    );
    await expect(
      pgClient(envA.env.DATABASE_URI, {
        user: new URL(api.config.databaseUrl).username || 'root',
        database: a.database,
      }).connect(),
    ).rejects.toThrow(/Only role/);
  });
});

describe('the Postgres front', () => {
  const frontPort = () => Number(new URL(envA.env.DATABASE_URI).port);
  /** Sends a raw startup packet for `params` to the front and returns its first answer's type and text. */
  async function rawStartup(params: Record<string, string>): Promise<string> {
    const socket = connect({ host: '127.0.0.1', port: frontPort() });
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    await new Promise((r) => socket.once('connect', r));
    socket.write(startupMessage(params));
    await new Promise((r) => socket.once('close', r).once('data', () => setTimeout(r, 100)));
    socket.destroy();
    return Buffer.concat(chunks).toString('latin1');
  }

  it('refuses another user or database, and identity settings in the startup packet', async () => {
    expect(access.frontsActive.postgres).toBe(true);
    const own = { user: a.database, database: a.database };
    expect(await rawStartup({ user: 'postgres', database: a.database })).toMatch(/^E.*Only role/s);
    expect(await rawStartup({ user: a.database, database: 'postgres' })).toMatch(/^E.*Only role/s);
    expect(await rawStartup({ user: b.database })).toMatch(/^E.*Only role/s);
    expect(await rawStartup({ ...own, replication: 'database' })).toMatch(/Replication connections are not allowed/);
    for (const setting of [
      { options: '-c role=postgres' },
      { options: '-c ro\\le=postgres' },
      { options: '--SESSION_AUTHORIZATION=postgres' },
      { role: 'postgres' },
      { Role: 'postgres' },
    ] as Array<Record<string, string>>) {
      expect(await rawStartup({ ...own, ...setting }), JSON.stringify(setting)).toMatch(/^E.*may not set a role/s);
    }
    // The packet's own parameters are all that count: a client's ordinary settings still pass.
    expect(await rawStartup({ ...own, application_name: 'app', options: '-c statement_timeout=5s' })).toMatch(
      /^R\0\0\0\x08\0\0\0\x03/,
    );
  });

  it("SET ROLE and SET SESSION AUTHORIZATION fail on the role's own privileges; it stays itself", async () => {
    const own = pgClient(envA.env.DATABASE_URI);
    await own.connect();
    await expect(own.query('SET ROLE postgres')).rejects.toThrow(/permission denied/);
    await expect(own.query('SET SESSION AUTHORIZATION postgres')).rejects.toThrow(/permission denied/);
    await expect(own.query(`SET ROLE "${b.database}"`)).rejects.toThrow(/permission denied|does not exist/);
    expect((await own.query('SELECT current_user AS c, session_user AS s')).rows[0]).toEqual({
      c: a.database,
      s: a.database,
    });
  });

  it('passes a CancelRequest on for a connection it relays', async () => {
    const own = pgClient(envA.env.DATABASE_URI);
    await own.connect();
    const sleeping = own.query('SELECT pg_sleep(20)');
    // Postgres cancels only a statement that runs: wait until it does (a loaded machine may not have sent it yet).
    const { processID: pid } = own as unknown as { processID: number };
    await eventually(
      async () => (await api.dataSource.query(`SELECT state FROM pg_stat_activity WHERE pid = $1`, [pid]))[0]?.state,
      (state) => state === 'active',
      10_000,
      50,
    );
    const socket = connect({ host: '127.0.0.1', port: frontPort() });
    await new Promise((r) => socket.once('connect', r));
    const { processID, secretKey } = own as unknown as { processID: number; secretKey: number };
    const cancel = Buffer.alloc(16);
    cancel.writeInt32BE(16, 0);
    cancel.writeInt32BE(80_877_102, 4);
    cancel.writeInt32BE(processID, 8);
    cancel.writeInt32BE(secretKey, 12);
    socket.end(cancel);
    // Only a key the front relayed goes through; this one did (BackendKeyData came through it).
    await expect(sleeping).rejects.toThrow(/canceling statement due to user request/);
  });
});

describe('sealed credentials', () => {
  it('are generated once, stored sealed, and survive a secrets-key rotation, fronts on the same ports', async () => {
    const box = secretsCodec(api.config);
    const store = new DeploymentCredentialStore(api.dataSource.manager, box);
    const before = await store.credentials(a.id);
    expect(before.databasePassword).toBe(passwordOf(envA.env.DATABASE_URI));
    expect(before.redisPassword).toBe(passwordOf(envA.env.REDIS_URI));
    expect(before.databasePassword).not.toBe((await store.credentials(b.id)).databasePassword);
    const [row] = await api.dataSource.query(
      `SELECT database_password_sealed, redis_password_sealed FROM deployment_credentials WHERE deployment_id = $1`,
      [a.id],
    );
    expect(JSON.stringify(row)).not.toContain(before.databasePassword);
    expect(JSON.stringify(row)).not.toContain(before.redisPassword);

    // A new deployer (same ports) with a new current key and the old one kept as previous.
    await access.closeAll();
    const rotated: Readonly<Config> = {
      ...api.config,
      secretsKey: { ...api.config.secretsKey, key: randomBytes(32) },
      previousSecretsKeys: [api.config.secretsKey.key, ...api.config.previousSecretsKeys],
    };
    const next = new DeploymentDataAccess(rotated, api.dataSource, secretsCodec(rotated), log);
    try {
      await next.start();
      const again = await next.environment(a.id, a.database);
      expect({ ...again, tracing: again.tracing.endpoint }).toEqual({ ...envA, tracing: envA.tracing.endpoint });
      // The trace-ingest credential is minted under the current key; instances started with the
      // one minted under the previous key keep tracing until their next rollout.
      expect(again.tracing.apiKey).not.toBe(envA.tracing.apiKey);
      for (const key of [envA.tracing.apiKey, again.tracing.apiKey]) {
        const res = await fetch(`${again.tracing.endpoint}/runs/batch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': key },
          body: '{"post":[]}',
        });
        expect(res.status).toBe(202);
      }
      const own = pgClient(again.env.DATABASE_URI);
      await own.connect();
      expect((await own.query('SELECT count(*)::int AS n FROM notes')).rows[0]).toEqual({ n: 0 });
      const redis = redisClient(again.env.REDIS_URI);
      await redis.connect();
      expect(await redis.get(`${again.env.REDIS_PREFIX}:greeting`)).toBe('hello');
    } finally {
      await next.close();
    }
    // The old deployer's fronts come back for the rest of the file.
    await access.ensureFronts(a.id, a.database);
    await access.ensureFronts(b.id, b.database);
  });
});

describe('teardown', () => {
  it('drops the Redis user (cutting its connections) and, with the database, the role', async () => {
    const redis = redisClient(envB.env.REDIS_URI);
    await redis.connect();
    expect(await redis.set(`${envB.env.REDIS_PREFIX}:x`, '1')).toBe('OK');
    await access.drop(b.id);
    await dropDeploymentDatabase(api.config.databaseUrl, b.database);
    const admin = redisClient(api.config.redisUrl);
    await admin.connect();
    expect(await admin.call('ACL', 'GETUSER', deploymentRedisUser(b.id))).toBeNull();
    await admin.del(`${envB.env.REDIS_PREFIX}:x`);
    expect(await api.dataSource.query(`SELECT 1 FROM pg_roles WHERE rolname = $1`, [b.database])).toEqual([]);
    await expect(redis.get(`${envB.env.REDIS_PREFIX}:x`)).rejects.toThrow();
  });
});
