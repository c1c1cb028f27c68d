import { randomInt } from 'node:crypto';
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { serialize } from 'pg-protocol';
import type { BackendMessage } from 'pg-protocol/dist/messages.js';
import { Parser } from 'pg-protocol/dist/parser.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretsCodec } from '@slipway/crypto';
import { deploymentDatabaseName } from '@slipway/domain';
import { createLogger } from '@slipway/logging';
import { deploymentRedisUser, RespRequestParser, startupMessage } from '@slipway/runtime';
import {
  DeploymentDataAccess,
  type DataEnvironment,
} from '../../services/deployer/src/provisioning/deployment-data-access.js';
import { Rng } from '../support/hostile-requests.js';
import { resp, sendInPieces, whoamiAnswer, whoamiProbe } from '../support/resp-probe.js';
import { dropDeploymentStores } from '../support/deployment-stores.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Fuzzing the data-access fronts (issue 24 item 4) with generated streams against the real
 * fronts, real Redis and real Postgres behind them. Redis: random RESP and inline commands (every
 * quoting the server accepts, NUL-suffixed names, mixed case), AUTH/HELLO/RESET variants naming
 * the deployment's user, `default` or another deployment's, invalid framing, all cut at random
 * points into separate packets, with `ACL WHOAMI` asked after every piece: no answer may name
 * anyone but the deployment's user. Postgres: random startup packets (users, databases, identity
 * settings, SSL/GSS requests, duplicates, broken lengths), random chunking and passwords; every
 * session that gets to ReadyForQuery must be the deployment's role (`current_user` and
 * `session_user`), after a SET ROLE / SET SESSION AUTHORIZATION attempt too. Afterwards both
 * fronts still serve an ordinary client. And the front's inline splitting, differentially: each
 * generated `ECHO <token>` line is read by RespRequestParser and sent straight to Redis (ECHO
 * touches no key); both must agree on the arguments, the refusal or the silence.
 *
 * Seeded: the seed is printed; SLIPWAY_FRONT_FUZZ_SEED=<seed> generates the same streams again,
 * SLIPWAY_FRONT_FUZZ_STREAMS changes how many of each (default 120).
 */
const SEED = Number(process.env.SLIPWAY_FRONT_FUZZ_SEED ?? randomInt(2 ** 31));
const STREAMS = Number(process.env.SLIPWAY_FRONT_FUZZ_STREAMS ?? 120);

let api: TestApi;
let access: DeploymentDataAccess;
const made: Array<{ id: string; database: string }> = [];
let own: { id: string; database: string; env: DataEnvironment['env'] };
let other: { id: string; database: string; env: DataEnvironment['env'] };

async function deployment(name: string) {
  const res = await api.http.post('/v2/deployments', {
    name,
    source: 'internal_source',
    source_config: { deployment_type: 'dev' },
    source_revision_config: {},
  });
  expect(res.status, res.text).toBe(201);
  const d = { id: res.body.id as string, database: deploymentDatabaseName(name, res.body.id) };
  made.push(d);
  return { ...d, env: (await access.environment(d.id, d.database)).env };
}

beforeAll(async () => {
  console.log(
    `front fuzz seed: ${SEED} (reproduce: SLIPWAY_FRONT_FUZZ_SEED=${SEED} pnpm exec vitest run test/integration/data-access-fuzz.test.ts)`,
  );
  api = await startTestApi();
  access = new DeploymentDataAccess(
    api.config,
    api.dataSource,
    secretsCodec(api.config),
    createLogger({ name: 'front-fuzz', level: 'silent' }),
  );
  await access.start();
  own = await deployment('fuzz-own');
  other = await deployment('fuzz-other');
}, 60_000);

afterAll(async () => {
  await access?.close();
  if (api) await dropDeploymentStores(api.config, made);
  await api?.close();
});

const password = (uri: string) => decodeURIComponent(new URL(uri).password);

/** Cuts `bytes` at random points into packets. */
function chunk(rng: Rng, bytes: Buffer): Buffer[] {
  const pieces: Buffer[] = [];
  for (let at = 0; at < bytes.length; ) {
    const size = rng.chance(0.3) ? 1 + rng.int(4) : 1 + rng.int(200);
    pieces.push(bytes.subarray(at, at + size));
    at += size;
  }
  return pieces;
}

describe('Redis front, fuzzed', () => {
  const ownUser = () => deploymentRedisUser(own.id);

  function verb(rng: Rng, name: string): string {
    let v = [...name].map((c) => (rng.chance(0.5) ? c.toLowerCase() : c)).join('');
    if (rng.chance(0.1)) v += `\0${rng.hex(2)}`;
    return v;
  }

  function command(rng: Rng): string[] {
    const creds = () =>
      rng.pick([
        [ownUser(), password(own.env.REDIS_URI)],
        ['default', rng.hex(3)],
        ['default', ''],
        [deploymentRedisUser(other.id), password(other.env.REDIS_URI)],
        [ownUser(), 'wrong'],
      ]);
    switch (rng.int(8)) {
      case 0:
        return [verb(rng, 'AUTH'), ...creds()];
      case 1:
        return [verb(rng, 'AUTH'), rng.pick([password(own.env.REDIS_URI), 'x', ''])];
      case 2: {
        const options: string[] = [];
        for (let i = rng.int(4); i > 0; i--)
          options.push(
            ...(rng.chance(0.7) ? [verb(rng, 'AUTH'), ...creds()] : [verb(rng, 'SETNAME'), `n${rng.hex(2)}`]),
          );
        return [verb(rng, 'HELLO'), rng.pick(['2', '3', '2']), ...options];
      }
      case 3:
        return [verb(rng, 'RESET')];
      case 4:
        return ['SET', `${own.env.REDIS_PREFIX}:k${rng.int(5)}`, rng.hex(rng.int(40))];
      case 5:
        return [
          rng.pick(['GET', 'PING', 'ECHO', 'SET']),
          rng.pick(['unprefixed', `${own.env.REDIS_PREFIX}:k1`, 'a b', '"q"', "it's"]),
        ];
      default:
        return [verb(rng, 'AUTH'), ownUser(), password(own.env.REDIS_URI)];
    }
  }

  /** An argument as inline text the server splits back into it (or null when it cannot be written inline). */
  function inlineArg(rng: Rng, arg: string): string | null {
    if (arg.includes('\0')) return null;
    const style = rng.int(4);
    if (style === 0 && arg && !/[\s"']/.test(arg)) return arg;
    if (style === 1 && !/[\r\n]/.test(arg)) return `'${arg.replace(/'/g, "\\'")}'`;
    if (style === 2 && /^[a-z]/i.test(arg) && !/[\s"'\\]/.test(arg)) return `${arg[0]}"${arg.slice(1)}"`;
    const escape = (c: string) =>
      c === '"' || c === '\\' ? `\\${c}` : rng.chance(0.2) ? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}` : c;
    return `"${[...arg].map(escape).join('')}"`;
  }

  function encode(rng: Rng, args: string[]): Buffer {
    if (rng.chance(0.6)) return resp(...args);
    const parts = args.map((a) => inlineArg(rng, a));
    if (parts.some((p) => p === null)) return resp(...args);
    return Buffer.from(`${parts.join(rng.pick([' ', '  ', '\t', ' \t ']))}${rng.pick(['\r\n', '\n'])}`);
  }

  const BROKEN = [
    '"AUTH default x\r\n',
    "'AUTH' default 'x\n",
    '"AUTH"default x\r\n',
    '*abc\r\n',
    '*2\r\n+OK\r\n',
    '*2\r\n$3\r\nGET\r\n',
    '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$99999999999\r\n',
    '*1\r\n$4\r\nPINGxx',
    '*99999999\r\n',
    '$4\r\nAUTH\r\n',
  ];

  it(`keeps every connection the deployment's user (${STREAMS} streams)`, async () => {
    const rng = new Rng(SEED);
    const port = Number(new URL(own.env.REDIS_URI).port);
    const streams = Array.from({ length: STREAMS }, (_, n) => {
      const pieces: Buffer[] = [];
      const nonces: string[] = [];
      for (let i = 1 + rng.int(8); i > 0; i--) {
        pieces.push(rng.chance(0.06) ? Buffer.from(rng.pick(BROKEN)) : encode(rng, command(rng)));
        const nonce = `p${n}-${nonces.length}-${rng.hex(3)}`;
        nonces.push(nonce);
        pieces.push(whoamiProbe(nonce));
      }
      if (rng.chance(0.05)) pieces.push(Buffer.from(`${'A'.repeat(70 * 1024)}`));
      return { n, nonces, packets: chunk(rng, Buffer.concat(pieces)) };
    });
    const failures: string[] = [];
    let answered = 0;
    for (let i = 0; i < streams.length; i += 8) {
      await Promise.all(
        streams.slice(i, i + 8).map(async ({ n, nonces, packets }) => {
          const { text } = await sendInPieces(port, packets, nonces.at(-1)!);
          for (const nonce of nonces) {
            const answer = whoamiAnswer(text, nonce);
            if (!answer) continue;
            answered += 1;
            const fine = answer.user === ownUser() || /SLIPWAY-FRONT:NOAUTH/i.test(answer.error ?? '');
            if (!fine) failures.push(`stream ${n} probe ${nonce}: ${JSON.stringify(answer)}`);
          }
        }),
      );
    }
    expect(failures, `seed ${SEED}`).toEqual([]);
    // The streams were read at all: most probes got an answer.
    expect(answered).toBeGreaterThan(STREAMS);
    // The front still serves an ordinary client.
    const redis = new Redis(own.env.REDIS_URI, {
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      enableReadyCheck: false,
    });
    try {
      expect(await redis.call('ACL', 'WHOAMI')).toBe(ownUser());
    } finally {
      redis.disconnect();
    }
  }, 300_000);
});

describe('inline splitting, against the Redis server itself', () => {
  /** Sends one inline line straight to Redis (ECHO touches no key) and returns its whole answer. */
  async function redisAnswer(line: Buffer): Promise<string> {
    const u = new URL(api.config.redisUrl);
    const socket = connect({ host: u.hostname || '127.0.0.1', port: Number(u.port) || 6379 });
    let text = '';
    await new Promise<void>((resolve) => {
      socket.on('data', (c: Buffer) => {
        text += c.toString('latin1');
        const bulk = /^\$(\d+)\r\n/.exec(text);
        if ((text[0] === '-' && text.endsWith('\r\n')) || (bulk && text.length >= bulk[0].length + Number(bulk[1]) + 2))
          resolve();
      });
      socket.on('close', () => resolve());
      socket.on('error', () => resolve());
      // Silence (a NUL before the newline) is an answer too.
      setTimeout(resolve, 1_000);
      socket.write(Buffer.concat([line, Buffer.from('\r\n')]));
    });
    socket.destroy();
    return text;
  }

  it('splits every generated line as the server does (quotes, escapes, blanks, NUL)', async () => {
    const rng = new Rng(SEED ^ 0x1e1e1e1e);
    const alphabet = ['a', 'b', '"', "'", '\\', 'x', '4', 'f', 'n', ' ', '\t', '\v', '\r', 'é'];
    const mismatches: string[] = [];
    for (let n = 0; n < STREAMS; n++) {
      const token = Array.from({ length: 1 + rng.int(10) }, () => (rng.chance(0.02) ? '\0' : rng.pick(alphabet))).join(
        '',
      );
      const line = Buffer.from(`ECHO ${token}`, 'latin1');
      const commands: Buffer[][] = [];
      let refused = '';
      try {
        new RespRequestParser({
          command: (a) => void commands.push(a),
          begin: () => false,
          bytes: () => undefined,
        }).push(Buffer.concat([line, Buffer.from('\r\n')]));
      } catch (err) {
        refused = (err as Error).message;
      }
      const args = commands[0];
      const answer = await redisAnswer(line);
      // A NUL hides the newline from the server (strchr): it answers nothing, the front refuses.
      const fine = /NUL/.test(refused)
        ? answer === ''
        : refused
          ? /^-ERR Protocol error: unbalanced/.test(answer)
          : args!.length !== 2
            ? /^-ERR wrong number of arguments/.test(answer)
            : answer === `$${args![1]!.length}\r\n${args![1]!.toString('latin1')}\r\n`;
      if (!fine)
        mismatches.push(
          `${JSON.stringify(token)}: front ${refused || JSON.stringify(args?.map((a) => a.toString('latin1')))} ` +
            `server ${JSON.stringify(answer)}`,
        );
    }
    expect(mismatches, `seed ${SEED}`).toEqual([]);
  }, 120_000);
});

describe('Postgres front, fuzzed', () => {
  /** Reads backend messages (pg-protocol's parser), after the 'N' answers to SSL/GSS requests. */
  function session(port: number, skipN: number) {
    const socket = connect({ host: '127.0.0.1', port });
    const parser = new Parser();
    const messages: BackendMessage[] = [];
    let wake: (() => void) | null = null;
    let closed = false;
    socket.on('data', (data: Buffer) => {
      while (skipN > 0 && data.length && data[0] === 0x4e) {
        skipN -= 1;
        data = data.subarray(1);
      }
      try {
        parser.parse(data, (m) => messages.push(m));
      } catch {
        socket.destroy();
      }
      wake?.();
    });
    socket.on('close', () => {
      closed = true;
      wake?.();
    });
    socket.on('error', () => undefined);
    const next = async (): Promise<BackendMessage | null> => {
      for (;;) {
        if (messages.length) return messages.shift()!;
        if (closed) return null;
        await new Promise<void>((r) => {
          const t = setTimeout(r, 10_000);
          wake = () => (clearTimeout(t), r());
        });
        wake = null;
        if (!messages.length && !closed) return null;
      }
    };
    return { socket, next };
  }

  it(`lets only the deployment's role in, as itself (${STREAMS} sessions)`, async () => {
    const rng = new Rng(SEED ^ 0x5a5a5a5a);
    const port = Number(new URL(own.env.DATABASE_URI).port);
    const role = own.database;
    const failures: string[] = [];
    let ready = 0;
    for (let n = 0; n < STREAMS; n++) {
      const params: Record<string, string> = {};
      params.user = rng.pick([role, role, role, other.database, 'postgres', `${role}\u0000`, role.toUpperCase()]);
      if (rng.chance(0.8)) params.database = rng.pick([role, role, other.database, 'postgres', api.database.name]);
      if (rng.chance(0.3))
        params.options = rng.pick([
          '-c role=postgres',
          '-c search_path=public',
          '-c ro\\le=postgres',
          '--session_authorization=postgres',
          '-c statement_timeout=5s',
        ]);
      if (rng.chance(0.15))
        params[rng.pick(['role', 'ROLE', 'session_authorization', 'replication', 'application_name'])] = 'postgres';
      // The first session is an ordinary one, so some session always gets in whatever the seed
      // (about 1 in 8 generated ones does: with few streams, none might).
      const ordinary = n === 0;
      if (ordinary) for (const k of Object.keys(params)) delete params[k];
      if (ordinary) Object.assign(params, { user: role, database: role });
      let startup = startupMessage(params);
      if (!ordinary && rng.chance(0.05))
        startup = Buffer.concat([
          startup.subarray(0, 4),
          startup.subarray(4, 8),
          Buffer.from('user\0postgres\0user\0'),
          startup.subarray(8),
        ]);
      if (!ordinary && rng.chance(0.03)) startup.writeInt32BE(rng.pick([0, 3, 99_999, -1]), 0);
      const requests = rng.int(3);
      const preamble = Array.from({ length: requests }, () =>
        rng.chance(0.5) ? serialize.requestSsl() : Buffer.from([0, 0, 0, 8, 4, 0xd2, 0x16, 0x30]),
      );
      const { socket, next } = session(port, requests);
      await new Promise((r) => socket.once('connect', r).once('error', r));
      for (const packet of chunk(rng, Buffer.concat([...preamble, startup]))) socket.write(packet);
      const goodPassword = ordinary || rng.chance(0.8);
      let message = await next();
      if (message?.name === 'authenticationCleartextPassword') {
        socket.write(serialize.password(goodPassword ? password(own.env.DATABASE_URI) : 'wrong'));
        do message = await next();
        while (message && message.name !== 'readyForQuery' && message.name !== 'error');
      }
      if (message?.name === 'readyForQuery') {
        ready += 1;
        if (!goodPassword) failures.push(`session ${n}: in with a wrong password (${JSON.stringify(params)})`);
        if (rng.chance(0.5))
          socket.write(
            serialize.query(
              rng.pick([
                'SET ROLE postgres',
                'SET SESSION AUTHORIZATION postgres',
                `SET ROLE "${other.database}"`,
                'RESET ROLE',
              ]),
            ),
          );
        socket.write(serialize.query('SELECT current_user, session_user'));
        let row: string[] | null = null;
        for (let m = await next(); m && !(m.name === 'readyForQuery' && row); m = await next()) {
          if (m.name === 'dataRow') row = (m as unknown as { fields: string[] }).fields;
        }
        if (row?.[0] !== role || row?.[1] !== role)
          failures.push(`session ${n}: ${JSON.stringify(row)} (${JSON.stringify(params)})`);
      }
      socket.destroy();
    }
    expect(failures, `seed ${SEED}`).toEqual([]);
    expect(ready).toBeGreaterThan(0);
  }, 300_000);
});
