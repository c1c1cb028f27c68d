import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '@slipway/config';
import { secretsCodec } from '@slipway/crypto';
import { createLogger } from '@slipway/logging';
import { DENIED_REDIS_COMMANDS, deploymentRedisUser, type RedisFront } from '@slipway/runtime';
import {
  DeploymentDataAccess,
  type DataEnvironment,
} from '../../services/deployer/src/provisioning/deployment-data-access.js';
import { createDeploymentRow, dropDeploymentStores } from '../support/deployment-stores.js';
import { resp, sendInPieces } from '../support/resp-probe.js';
import { eventually } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * What one deployment can learn of or take from the others on the shared Postgres and Redis
 * (issue 32): its Redis user cannot list or count another tenant's channels, nor SELECT, nor
 * size the keyspace, directly or through its front (which refuses them itself even when the ACL
 * is loosened); and its connections are bounded per deployment, by its database role and by its
 * fronts, so one app at the bound leaves every other deployment its own. Real servers; bounds set
 * low through the same variables an operator sets. Everything made here is dropped in afterAll.
 */
const DB_LIMIT = 3;
const REDIS_LIMIT = 4;

let api: TestApi;
let access: DeploymentDataAccess;
const made: Array<{ id: string; database: string }> = [];
const closers: Array<() => unknown> = [];
const log = createLogger({ name: 'data-access-bounds-test', level: 'silent' });
let a: { id: string; database: string };
let b: { id: string; database: string };
let envA: DataEnvironment;
let envB: DataEnvironment;

async function createDeployment(name: string): Promise<{ id: string; database: string }> {
  const d = await createDeploymentRow(api, name);
  made.push(d);
  return d;
}

function redisClient(options: string | { host: string; port: number; username: string; password: string }): Redis {
  const settings = { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true, enableReadyCheck: false };
  const client = typeof options === 'string' ? new Redis(options, settings) : new Redis({ ...options, ...settings });
  client.on('error', () => undefined);
  closers.push(() => client.disconnect());
  return client;
}

/** A deployment's user straight at the Redis server, past its front (this machine's `default` user is open, so nothing stops it). */
function directRedis(env: DataEnvironment): Redis {
  const server = new URL(api.config.redisUrl);
  const own = new URL(env.env.REDIS_URI);
  return redisClient({
    host: server.hostname,
    port: Number(server.port || 6379),
    username: decodeURIComponent(own.username),
    password: decodeURIComponent(own.password),
  });
}

function pgClient(uri: string): pg.Client {
  const client = new pg.Client({ connectionString: uri, connectionTimeoutMillis: 5_000 });
  client.on('error', () => undefined);
  closers.push(() => client.end().catch(() => undefined));
  return client;
}

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    (value) => `allowed: ${JSON.stringify(value)}`,
    (err: Error) => err.message,
  );

/** Commands that would show one tenant another's channels or the server's keyspace. */
const PEEKS: string[][] = [
  ['PUBSUB', 'CHANNELS'],
  ['PUBSUB', 'CHANNELS', '*'],
  ['PUBSUB', 'NUMSUB'],
  ['PUBSUB', 'NUMPAT'],
  ['PUBSUB', 'SHARDCHANNELS'],
  ['PUBSUB', 'SHARDNUMSUB'],
  ['SELECT', '1'],
  ['DBSIZE'],
  ['KEYS', '*'],
  ['SCAN', '0'],
  ['RANDOMKEY'],
  ['CLIENT', 'LIST'],
  ['INFO', 'keyspace'],
  ['MEMORY', 'STATS'],
  ['SLOWLOG', 'GET'],
  ['LATENCY', 'LATEST'],
  ['LASTSAVE'],
  ['WAIT', '0', '0'],
];

beforeAll(async () => {
  api = await startTestApi({
    SLIPWAY_DEPLOYMENT_DB_CONNECTION_LIMIT: String(DB_LIMIT),
    SLIPWAY_DEPLOYMENT_REDIS_CONNECTION_LIMIT: String(REDIS_LIMIT),
  });
  access = new DeploymentDataAccess(api.config, api.dataSource, secretsCodec(api.config), log);
  await access.start();
  expect(access.frontsActive).toEqual({ postgres: true, redis: true });
  a = await createDeployment('bounds-alpha');
  b = await createDeployment('bounds-beta');
  envA = await access.environment(a.id, a.database);
  envB = await access.environment(b.id, b.database);
}, 60_000);

afterAll(async () => {
  await Promise.allSettled(closers.map((close) => close()));
  await access?.close();
  if (api) await dropDeploymentStores(api.config, made);
  await api?.close();
});

describe("another tenant's Redis channels and the server's keyspace", () => {
  let channel: string;
  let subscriber: Redis;

  beforeAll(async () => {
    // Deployment A's app subscribes to a channel of its own, through its front.
    channel = `${envA.env.REDIS_PREFIX}:runs:secret-run-id`;
    subscriber = redisClient(envA.env.REDIS_URI);
    await subscriber.connect();
    await subscriber.subscribe(channel);
    const admin = redisClient(api.config.redisUrl);
    await admin.connect();
    expect(await admin.call('PUBSUB', 'CHANNELS', `${envA.env.REDIS_PREFIX}:*`)).toEqual([channel]);
  });

  afterAll(async () => {
    await subscriber.quit();
  });

  it('B, straight at the server: every listing and keyspace-wide command is refused by its ACL', async () => {
    const direct = directRedis(envB);
    await direct.connect();
    for (const command of PEEKS) {
      expect(await refusal(direct.call(command[0]!, ...command.slice(1))), command.join(' ')).toMatch(/NOPERM/);
    }
    expect(await direct.call('ACL', 'WHOAMI')).toBe(deploymentRedisUser(b.id));
  });

  it('B, through its front: refused with an error naming the command; pipelined replies keep their order', async () => {
    const front = redisClient(envB.env.REDIS_URI);
    await front.connect();
    for (const command of PEEKS) {
      expect(await refusal(front.call(command[0]!, ...command.slice(1))), command.join(' ')).toMatch(/NOPERM/);
    }
    expect(await refusal(front.call('PUBSUB', 'CHANNELS'))).toMatch(
      /SLIPWAY-FRONT:NOPERM-deployments-may-not-run-PUBSUB/,
    );
    // Its own work goes on, and the subcommands client libraries send while connecting pass.
    expect(await front.set(`${envB.env.REDIS_PREFIX}:k`, 'v')).toBe('OK');
    expect(await front.call('CLIENT', 'SETNAME', 'bounds-test')).toBe('OK');
    expect(await front.call('ACL', 'WHOAMI')).toBe(deploymentRedisUser(b.id));

    const nonce = 'after-the-peeks';
    const { text } = await sendInPieces(
      Number(new URL(envB.env.REDIS_URI).port),
      [
        Buffer.concat([
          resp('AUTH', deploymentRedisUser(b.id), decodeURIComponent(new URL(envB.env.REDIS_URI).password)),
          resp('PING'),
          resp('PUBSUB\0junk', 'CHANNELS'),
          Buffer.from('pubsub numsub x\r\nselect 3\r\n'),
          resp('DBSIZE'),
          resp('ECHO', nonce),
        ]),
      ],
      nonce,
    );
    const lines = text.split('\r\n').filter((line) => /^[-+$]/.test(line));
    expect(lines.slice(0, 6)).toEqual([
      '+OK',
      '+PONG',
      expect.stringMatching(/^-ERR unknown command 'SLIPWAY-FRONT:NOPERM/),
      expect.stringMatching(/^-ERR unknown command 'SLIPWAY-FRONT:NOPERM/),
      expect.stringMatching(/^-ERR unknown command 'SLIPWAY-FRONT:NOPERM/),
      expect.stringMatching(/^-ERR unknown command 'SLIPWAY-FRONT:NOPERM/),
    ]);
    expect(text).not.toContain(channel);
  });

  it(
    'the front refuses them itself: with the ACL loosened, B straight at the server sees the channel, ' +
      'through its front it still does not',
    async () => {
      const admin = redisClient(api.config.redisUrl);
      await admin.connect();
      const user = deploymentRedisUser(b.id);
      try {
        // Only the read-only peeks (never FLUSHALL or SWAPDB on the shared server), each of them a DENIED_REDIS_COMMANDS entry.
        const peeks = [...new Set(PEEKS.map(([name]) => name!.toLowerCase()))];
        expect(peeks.filter((c) => !(DENIED_REDIS_COMMANDS as readonly string[]).includes(c))).toEqual([]);
        await admin.call('ACL', 'SETUSER', user, ...peeks.map((c) => `+${c}`));
        const direct = directRedis(envB);
        await direct.connect();
        // What the ACL alone was holding back: A's channel, by name.
        expect(await direct.call('PUBSUB', 'CHANNELS')).toContain(channel);

        const front = redisClient(envB.env.REDIS_URI);
        await front.connect();
        for (const command of PEEKS) {
          expect(await refusal(front.call(command[0]!, ...command.slice(1))), command.join(' ')).toMatch(
            /SLIPWAY-FRONT:NOPERM/,
          );
        }
      } finally {
        // Provisioning resets the user to its rules (as before every rollout).
        await access.provision(b.id, b.database);
      }
      const direct = directRedis(envB);
      await direct.connect();
      expect(await refusal(direct.call('PUBSUB', 'CHANNELS'))).toMatch(/NOPERM/);
    },
  );
});

describe('connections per deployment', () => {
  it("the role's CONNECTION LIMIT is the configured bound, also for a role made under an older, higher one", async () => {
    const limitOf = async (role: string) =>
      (await api.dataSource.query(`SELECT rolconnlimit FROM pg_roles WHERE rolname = $1`, [role]))[0]?.rolconnlimit;
    expect(await limitOf(a.database)).toBe(DB_LIMIT);
    const older: Readonly<Config> = { ...api.config, deploymentDbConnectionLimit: 100 };
    await new DeploymentDataAccess(older, api.dataSource, secretsCodec(older), log).provision(b.id, b.database);
    expect(await limitOf(b.database)).toBe(100);
    await access.provision(b.id, b.database);
    expect(await limitOf(b.database)).toBe(DB_LIMIT);
  });

  it(
    "Postgres: A's connections through its front are refused past the bound (53300), " +
      "B's database is still reachable through its own",
    async () => {
      const held: pg.Client[] = [];
      for (let i = 0; i < DB_LIMIT; i++) {
        const client = pgClient(envA.env.DATABASE_URI);
        await client.connect();
        held.push(client);
      }
      const over = pgClient(envA.env.DATABASE_URI);
      const err = await over.connect().then(
        () => null,
        (e: { code?: string; message: string }) => e,
      );
      expect(err?.code).toBe('53300');
      expect(err?.message).toMatch(
        new RegExp(`too many connections for role "${a.database}": this deployment may hold at most ${DB_LIMIT}`),
      );

      const other = pgClient(envB.env.DATABASE_URI);
      await other.connect();
      expect((await other.query('SELECT current_database() AS d')).rows[0]).toEqual({ d: b.database });
      await other.end();

      // A slot freed is a slot again.
      await held.pop()!.end();
      const again = await eventually(
        async () => {
          const client = pgClient(envA.env.DATABASE_URI);
          return client.connect().then(
            () => client,
            () => null,
          );
        },
        (client) => client !== null,
        10_000,
        100,
      );
      expect((await again!.query('SELECT 1 AS one')).rows[0]).toEqual({ one: 1 });
      await Promise.all([...held, again!].map((c) => c.end()));
    },
  );

  it("Redis: A's connections through its front are refused past the bound, B's front still answers", async () => {
    const front = (await access.ensureFronts(a.id)).redis as RedisFront;
    await eventually(
      () => front.connections,
      (n) => n === 0,
      5_000,
      50,
    );
    const held: Redis[] = [];
    for (let i = 0; i < REDIS_LIMIT; i++) {
      const client = redisClient(envA.env.REDIS_URI);
      await client.connect();
      expect(await client.ping()).toBe('PONG');
      held.push(client);
    }
    // One more: the front answers at once, as the server does past `maxclients`, and closes.
    expect(front.connections).toBe(REDIS_LIMIT);
    const { text, closed } = await sendInPieces(
      Number(new URL(envA.env.REDIS_URI).port),
      [resp('PING')],
      'never',
      1_000,
    );
    expect(closed).toBe(true);
    expect(text).toBe(
      `-ERR max number of clients reached: this deployment may hold at most ${REDIS_LIMIT} Redis connections at once\r\n`,
    );
    const over = redisClient(envA.env.REDIS_URI);
    expect(await refusal(over.connect().then(() => over.ping()))).not.toMatch(/^allowed/);

    const other = redisClient(envB.env.REDIS_URI);
    await other.connect();
    expect(await other.ping()).toBe('PONG');
    other.disconnect();

    held.pop()!.disconnect();
    const again = await eventually(
      async () => {
        const client = redisClient(envA.env.REDIS_URI);
        return client
          .connect()
          .then(() => client.ping())
          .then(
            () => client,
            () => null,
          );
      },
      (client) => client !== null,
      10_000,
      100,
    );
    expect(await again!.ping()).toBe('PONG');
    for (const client of [...held, again!]) client.disconnect();
  });
});
