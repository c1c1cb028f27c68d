import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, redactValues } from './index.js';

/** Keeps what the logger writes; pino writes each line synchronously to a plain Writable. */
class Capture extends Writable {
  readonly chunks: string[] = [];
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    this.chunks.push(chunk.toString());
    callback();
  }
  text(): string {
    return this.chunks.join('');
  }
  lines(): any[] {
    return this.text()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  }
}

function capturedLogger(level = 'info') {
  const out = new Capture();
  return { log: createLogger({ name: 'test', level, destination: out }), out };
}

describe('createLogger', () => {
  it('writes JSON lines with a level label, ISO time and the service name', () => {
    const { log, out } = capturedLogger();
    log.info({ n: 1 }, 'hello');
    log.debug('not at info');
    const lines = out.lines();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'info', service: 'test', name: 'test', n: 1, msg: 'hello' });
    expect(lines[0].time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('redacts credentials in request headers, keeping the other headers', () => {
    const { log, out } = capturedLogger();
    log.info({
      req: {
        method: 'GET',
        headers: {
          'x-api-key': 'slw_key_value_1',
          authorization: 'Bearer token-value-2',
          cookie: 'sid=cookie-3',
          'x-tenant-id': 'ws-1',
        },
      },
      res: { headers: { 'set-cookie': 'sid=cookie-4' } },
    });
    const [line] = out.lines();
    expect(line.req.headers).toEqual({
      'x-api-key': '[REDACTED]',
      authorization: '[REDACTED]',
      cookie: '[REDACTED]',
      'x-tenant-id': 'ws-1',
    });
    expect(line.res.headers['set-cookie']).toBe('[REDACTED]');
    expect(line.req.method).toBe('GET');
    for (const secret of ['slw_key_value_1', 'token-value-2', 'cookie-3', 'cookie-4'])
      expect(out.text()).not.toContain(secret);
  });

  it('redacts bare headers objects (as passed to outbound clients)', () => {
    const { log, out } = capturedLogger();
    log.info({ headers: { 'x-api-key': 'slw_key_value_5', authorization: 'Bearer token-value-6', accept: 'json' } });
    expect(out.lines()[0].headers).toEqual({ 'x-api-key': '[REDACTED]', authorization: '[REDACTED]', accept: 'json' });
  });

  it('redacts secret fields of logged objects', () => {
    const { log, out } = capturedLogger();
    log.info({
      provider: { provider_id: 'github', client_id: 'public-id', client_secret: 'client-secret-7' },
      body: { clientSecret: 'client-secret-8', api_key: 'api-key-9', password: 'password-10', token: 'token-11' },
      created: { id: 'k1', key: 'slw_created_12' },
    });
    const [line] = out.lines();
    expect(line.provider).toEqual({ provider_id: 'github', client_id: 'public-id', client_secret: '[REDACTED]' });
    expect(line.body).toEqual({
      clientSecret: '[REDACTED]',
      api_key: '[REDACTED]',
      password: '[REDACTED]',
      token: '[REDACTED]',
    });
    expect(line.created).toEqual({ id: 'k1', key: '[REDACTED]' });
  });

  it('redacts the value of every secret in a secrets list, keeping the names', () => {
    const { log, out } = capturedLogger();
    log.info({
      deployment: {
        name: 'agent',
        secrets: [
          { name: 'OPENAI_API_KEY', value: 'sk-secret-13' },
          { name: 'DB_PASSWORD', value: 'secret-14' },
        ],
      },
    });
    expect(out.lines()[0].deployment).toEqual({
      name: 'agent',
      secrets: [
        { name: 'OPENAI_API_KEY', value: '[REDACTED]' },
        { name: 'DB_PASSWORD', value: '[REDACTED]' },
      ],
    });
    expect(out.text()).not.toMatch(/secret-1[34]/);
  });

  it('redacts the bound parameters of a failed query, keeping the message and stack', () => {
    const { log, out } = capturedLogger();
    const err = Object.assign(new Error('duplicate key value violates unique constraint'), {
      query: 'INSERT INTO oauth_providers (client_secret) VALUES ($1)',
      parameters: ['encrypted-or-not-16'],
      code: '23505',
    });
    log.error({ err }, 'insert failed');
    log.warn({ failure: { parameters: ['nested-17'] } });
    log.warn({ parameters: ['top-level-18'] });
    const [first, second, third] = out.lines();
    expect(first.err).toMatchObject({
      type: 'Error',
      message: 'duplicate key value violates unique constraint',
      code: '23505',
      parameters: '[REDACTED]',
    });
    expect(first.err.stack).toContain('duplicate key value');
    expect(second.failure.parameters).toBe('[REDACTED]');
    expect(third.parameters).toBe('[REDACTED]');
    expect(out.text()).not.toMatch(/encrypted-or-not-16|nested-17|top-level-18/);
  });

  it('honours the level', () => {
    const { log, out } = capturedLogger('warn');
    log.info('dropped');
    log.warn('kept');
    expect(out.lines().map((l) => l.msg)).toEqual(['kept']);
  });
});

describe('createLogger with the platform credentials', () => {
  const dbPassword = 'pg-Pass"word\\1';
  const redisPassword = 'redis-pass-7f3a';
  const secrets = [dbPassword, redisPassword, 'c2VjcmV0cy1rZXktYmFzZTY0'];

  it('masks them wherever they appear: the message, any field, an error, JSON-escaped or not', () => {
    const out = new Capture();
    const log = createLogger({ name: 'test', destination: out, secrets });
    log.info(`connecting to redis://:${redisPassword}@redis:6379/0`);
    log.warn({ target: { url: `postgres://slipway:${dbPassword}@db/slipway`, note: 'kept' } }, 'db');
    log.error({ err: new Error(`auth failed for ${redisPassword}`), key: 'c2VjcmV0cy1rZXktYmFzZTY0' }, 'boom');
    const text = out.text();
    for (const secret of [
      redisPassword,
      'c2VjcmV0cy1rZXktYmFzZTY0',
      dbPassword,
      JSON.stringify(dbPassword).slice(1, -1),
    ])
      expect(text).not.toContain(secret);
    const lines = out.lines();
    expect(lines[0].msg).toBe('connecting to redis://:********@redis:6379/0');
    expect(lines[1].target).toEqual({ url: 'postgres://slipway:********@db/slipway', note: 'kept' });
    expect(lines[2].err.message).toBe('auth failed for ********');
  });

  it('keeps a field named like a weak password (postgres), masking it in every value', () => {
    const out = new Capture();
    createLogger({ name: 'test', destination: out, secrets: ['postgres'] }).error(
      { checks: { postgres: 'unreachable', redis: 'ok' } },
      'postgres://postgres:postgres@db is down',
    );
    const [line] = out.lines();
    expect(line.checks).toEqual({ postgres: 'unreachable', redis: 'ok' });
    expect(line.msg).toBe('********://********:********@db is down');
  });

  it('rewrites values only, never field names, however a weak password hides in them', () => {
    const out = new Capture();
    const log = createLogger({ name: 'test', destination: out, secrets: ['Pass', 'hunter22'] });
    log.info(
      {
        Passwordless: true,
        PasswordPolicy: 'Pass',
        hunter22_host: 'db',
        nested: { Pass: 'x', note: 'Password reset' },
      },
      'Password of Pass; hunter22x',
    );
    const [line] = out.lines();
    expect(Object.keys(line)).toEqual(expect.arrayContaining(['Passwordless', 'PasswordPolicy', 'hunter22_host']));
    expect(line.PasswordPolicy).toBe('********');
    expect(line.nested).toEqual({ Pass: 'x', note: 'Password reset' });
    expect(line.msg).toBe('Password of ********; ********x');
  });

  it('keeps numbers and literals as they are, so the line stays JSON', () => {
    const out = new Capture();
    createLogger({ name: 'test', destination: out, secrets: ['12345678', 'true'] }).info(
      { pid: 12345678, ok: true, port: '12345678' },
      'started',
    );
    const [line] = out.lines();
    expect(line).toMatchObject({ pid: 12345678, ok: true, port: '********' });
  });

  it('without them, lines are written as they are', () => {
    const out = new Capture();
    createLogger({ name: 'test', destination: out }).info(`redis://:${redisPassword}@redis`);
    expect(out.lines()[0].msg).toBe(`redis://:${redisPassword}@redis`);
  });
});

describe('redactValues', () => {
  it('masks every occurrence of each known value', () => {
    expect(redactValues('token=abcd1234 again abcd1234; other=zzzz9', ['abcd1234', 'zzzz9'])).toBe(
      'token=******** again ********; other=********',
    );
  });

  it('leaves values shorter than 4 characters alone', () => {
    expect(redactValues('a=abc and abcd', ['abc', 'abcd'])).toBe('a=abc and ********');
    expect(redactValues('empty values change nothing', ['', 'x'])).toBe('empty values change nothing');
  });

  it('masks the longest value first, so a secret containing another leaks no tail', () => {
    expect(redactValues('pass=hunter2hunter2!', ['hunter2', 'hunter2hunter2!'])).toBe('pass=********');
  });

  it('masks a value shorter than 8 only as a word of its own, a longer one anywhere', () => {
    expect(redactValues('Password: Pass, Passwordless=Pass1 (Pass)', ['Pass'])).toBe(
      'Password: ********, Passwordless=Pass1 (********)',
    );
    expect(redactValues('x=Über1 Über12', ['Über1'])).toBe('x=******** Über12');
    expect(redactValues('-pw- in a-pw-b', ['-pw-'])).toBe('******** in a********b');
    expect(redactValues('prefixhunter22suffix', ['hunter22'])).toBe('prefix********suffix');
  });

  it('treats values literally, not as patterns', () => {
    expect(redactValues('a.b+c* and axbbc', ['a.b+c*'])).toBe('******** and axbbc');
  });

  it('accepts any iterable and leaves text without secrets untouched', () => {
    expect(redactValues('nothing to see', new Set(['secret-value']))).toBe('nothing to see');
  });
});
