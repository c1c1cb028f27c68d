import { connect } from 'node:net';
import type { Rng } from './hostile-requests.js';

/**
 * A seeded generator of raw HTTP/1.x requests for fuzzing what serves deployments: request lines
 * (methods, targets in every form, versions), headers (Host absent, empty, repeated or odd;
 * control bytes and obs-text; Connection/Upgrade combinations; conflicting framing; huge values)
 * and framing (bodies of the stated length or not, chunked right and wrong, pipelined requests,
 * bare LF line ends, requests cut at any byte). Each request is bytes, not a client's idea of a
 * request: Node's own client would refuse to send most of these.
 */
export interface RawRequest {
  /** Sent in order, each as its own write. */
  pieces: Buffer[];
  /** A readable one-line summary for failure messages. */
  summary: string;
}

// Each part is ordinary most of the time, so that most requests get past the parser into the
// proxy's own code (admission, forwarding, upgrades), and hostile the rest.
const METHODS = ['GET', 'GET', 'GET', 'POST', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'PATCH'];
const ODD_METHODS = ['CONNECT', 'TRACE', 'PRI', 'get', 'PROPFIND', 'M-SEARCH', 'G\x01T', ''];
const VERSIONS = ['HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0'];
const ODD_VERSIONS = ['HTTP/0.9', 'HTTP/2.0', 'HTTP/1.10', 'http/1.1', 'HTTP/1.1 x', ''];

function target(rng: Rng): string {
  switch (rng.int(24)) {
    case 0:
      return '*';
    case 1:
      return `http://${rng.pick(['', 'elsewhere.example', '127.0.0.1:5432', '[::1]', 'a@b'])}/${rng.pick(['ok', 'x?y=1', ''])}`;
    case 2:
      return rng.pick(['127.0.0.1:5432', 'host:80', 'ftp://x/', 'x', '']);
    case 3:
      return '/' + 'a'.repeat(rng.int(20_000));
    case 4:
      return rng.pick([
        '//double',
        '/%00',
        '/..%2f..%2fetc/passwd',
        '/a%zz',
        '/\xff\xfe',
        '/a b',
        '/#frag',
        '/?' + '&'.repeat(500),
      ]);
    case 5:
      return '/' + rng.hex(rng.int(12));
    default:
      return rng.pick(['/ok', '/', '/echo?x=1', '/threads', '/ok?probe=1']);
  }
}

function hostHeaders(rng: Rng, host: string): string[] {
  switch (rng.int(14)) {
    case 0:
      return [];
    case 1:
      return ['Host:'];
    case 2:
      return ['Host: a', 'Host: b'];
    case 3:
      return [`Host: ${rng.pick(['x\x01y', 'caf\xe9', 'a b', '[::1', ':::', 'x'.repeat(300), '127.0.0.1:99999'])}`];
    default:
      return [`Host: ${host}`];
  }
}

/** Headers that Node's parser passes on: what reaches the proxy's own code. */
function ordinaryHeader(rng: Rng, key: string): string {
  return rng.pick([
    `X-Api-Key: ${key}`,
    `Authorization: Bearer ${key}`,
    `X-Api-Key: slw_${rng.hex(16)}`,
    `X-Forwarded-Host: ${rng.pick(['caf\xe9', '', 'evil.example'])}`,
    `X-Forwarded-For: ${rng.pick(['1.2.3.4', '', '1.1.1.1, 2.2.2.2'])}`,
    `Connection: ${rng.pick(['Upgrade', 'close', 'keep-alive', 'x-api-key, Upgrade', 'host', 'te, trailer'])}`,
    `Upgrade: ${rng.pick(['websocket', 'echo', 'h2c', ''])}`,
    `X-Test-${rng.int(100)}: ${rng.pick(['plain', 'caf\xe9', '\t tabbed \t', 'a,b;c=d'])}`,
  ]);
}

function otherHeaders(rng: Rng, key: string, hostile: boolean): string[] {
  const out: string[] = [];
  const n = rng.int(4);
  for (let i = 0; i < n; i++) {
    if (!hostile) {
      out.push(ordinaryHeader(rng, key));
      continue;
    }
    switch (rng.int(22)) {
      case 0:
        out.push(`X-Forwarded-Host: ${rng.pick(['a\x01b', 'a\x7fb', 'caf\xe9', '', 'evil.example'])}`);
        break;
      case 1:
        out.push(`X-Forwarded-For: ${rng.pick(['1.2.3.4', 'x\x00y', '', '1.1.1.1, 2.2.2.2'])}`);
        break;
      case 2:
        out.push(
          `Connection: ${rng.pick(['Upgrade', 'close', 'keep-alive', 'x-api-key, Upgrade', 'host', 'te, trailer', ''])}`,
        );
        break;
      case 3:
        out.push(`Upgrade: ${rng.pick(['websocket', 'echo', 'h2c', '', 'x\x01'])}`);
        break;
      case 4:
        out.push(
          `Transfer-Encoding: ${rng.pick(['chunked', 'gzip, chunked', 'chunked, chunked', 'identity', 'xchunked'])}`,
        );
        break;
      case 5:
        out.push(`Content-Length: ${rng.pick(['0', '5', '-1', '99999999999999999999', ' 3', '3, 4', 'abc'])}`);
        break;
      case 6:
        out.push(`X-Api-Key: ${rng.pick([key, 'slw_' + rng.hex(16), 'not-a-key', ''])}`);
        break;
      case 7:
        out.push(`Authorization: ${rng.pick([`Bearer ${key}`, 'Bearer x', 'Basic Og==', ''])}`);
        break;
      case 8:
        out.push(' folded-continuation');
        break;
      case 9:
        out.push(rng.pick(['NoColon', 'Bad Name: x', ': empty-name', 'X-Nul: a\x00b', 'X\x01: y']));
        break;
      case 10:
        out.push(`X-Long: ${'v'.repeat(rng.pick([100, 8_000, 70_000]))}`);
        break;
      case 11:
        for (let j = rng.int(300); j > 0; j--) out.push(`X-Many-${j}: ${j}`);
        break;
      case 12:
        out.push(`Expect: ${rng.pick(['100-continue', 'nonsense'])}`);
        break;
      default:
        out.push(`X-Test-${rng.int(100)}: ${rng.pick(['plain', 'caf\xe9', '\t tabbed \t', 'a,b;c=d'])}`);
    }
  }
  return out;
}

function body(rng: Rng, headers: string[], hostile: boolean): string {
  switch (rng.int(hostile ? 6 : 2)) {
    case 0: {
      const payload = rng.hex(rng.int(64));
      headers.push(`Content-Length: ${payload.length}`);
      return payload;
    }
    case 1:
      headers.push('Transfer-Encoding: chunked');
      return hostile
        ? rng.pick(['zz\r\nxx\r\n', '5\r\nhel', 'ffffffffffffffff\r\n'])
        : rng.pick(['5\r\nhello\r\n0\r\n\r\n', '0\r\n\r\n', '5;ext=1\r\nhello\r\n0\r\nTrailer: x\r\n\r\n']);
    case 2:
      // Both framings: a smuggling attempt.
      headers.push('Content-Length: 4', 'Transfer-Encoding: chunked');
      return '0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
    default:
      return '';
  }
}

/**
 * One generated request: usually one, sometimes two pipelined, sometimes cut short. About half
 * have hostile headers or framing; the rest are ordinary enough to get past Node's parser.
 */
export function rawRequest(rng: Rng, key: string, host = 'serving.local'): RawRequest {
  const count = rng.chance(0.1) ? 2 : 1;
  let text = '';
  const summaries: string[] = [];
  for (let i = 0; i < count; i++) {
    const method = rng.pick(rng.chance(0.9) ? METHODS : ODD_METHODS);
    const line = `${method} ${target(rng)} ${rng.pick(rng.chance(0.9) ? VERSIONS : ODD_VERSIONS)}`;
    const hostile = rng.chance(0.5);
    const headers = [...hostHeaders(rng, host), ...otherHeaders(rng, key, hostile)];
    const payload = method === 'GET' && rng.chance(0.7) ? '' : body(rng, headers, hostile);
    const eol = rng.chance(0.05) ? rng.pick(['\n', '\r', '\r\r\n']) : '\r\n';
    text += [line, ...headers].join(eol) + eol + eol + payload;
    summaries.push(`${line.slice(0, 80)} [${headers.length} headers, ${payload.length} body bytes]`);
  }
  let bytes = Buffer.from(text, 'latin1');
  if (rng.chance(0.08)) bytes = bytes.subarray(0, rng.int(bytes.length));
  const pieces: Buffer[] = [];
  for (let at = 0; at < bytes.length; ) {
    const size = rng.chance(0.2) ? 1 + rng.int(16) : bytes.length;
    pieces.push(bytes.subarray(at, at + size));
    at += size;
  }
  return { pieces, summary: JSON.stringify(summaries.join(' | ')) };
}

export interface RawExchange {
  /** The status of every response that began in what came back. */
  statuses: number[];
  data: string;
  /** The server kept the connection open after the client had said all it would (closed by the client). */
  timedOut: boolean;
}

/** Whether `data` holds at least one whole response (the first one decides). */
export function holdsWholeResponse(data: string, headRequest: boolean): boolean {
  let at = 0;
  for (;;) {
    const end = data.indexOf('\r\n\r\n', at);
    if (end < 0) return false;
    const head = data.slice(at, end);
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
    // An interim answer (100 Continue): the real one follows.
    if (status >= 100 && status < 200 && status !== 101) {
      at = end + 4;
      continue;
    }
    if (status === 101 || status === 204 || status === 304 || headRequest) return true;
    const body = data.slice(end + 4);
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (length) return Buffer.byteLength(body, 'latin1') >= Number(length[1]);
    if (/\r\ntransfer-encoding: *chunked/i.test(head)) return /(^|\r\n)0\r\n\r\n/.test(body);
    // Delimited by the close.
    return false;
  }
}

/**
 * Sends a raw request on a new connection and reads what comes back. The client half-closes once
 * a whole response arrived, or the server said nothing for `quietMs` after the last byte (it may
 * be waiting for a body that never comes); the server must then close within `timeoutMs`.
 */
export function exchange(
  port: number,
  request: RawRequest,
  { quietMs = 1_000, timeoutMs = 3_000 } = {},
): Promise<RawExchange> {
  const headRequest = request.pieces[0]?.subarray(0, 5).toString('latin1') === 'HEAD ';
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    let timedOut = false;
    let ended = false;
    let quiet: NodeJS.Timeout | undefined;
    let deadline: NodeJS.Timeout | undefined;
    const finish = () => {
      if (ended) return;
      ended = true;
      clearTimeout(quiet);
      if (socket.writable) socket.end();
      deadline = setTimeout(() => {
        timedOut = true;
        socket.destroy();
      }, timeoutMs);
    };
    socket.on('data', (c: Buffer) => {
      data += c.toString('latin1');
      if (holdsWholeResponse(data, headRequest)) finish();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(quiet);
      clearTimeout(deadline);
      resolve({
        statuses: [...data.matchAll(/(?:^|\r\n)HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1])),
        data,
        timedOut,
      });
    });
    socket.on('connect', async () => {
      for (const piece of request.pieces) {
        if (!socket.writable || ended) return;
        socket.write(piece);
        if (request.pieces.length > 1) await new Promise((r) => setImmediate(r));
      }
      if (!ended) quiet = setTimeout(finish, quietMs);
    });
  });
}

export interface RawReply {
  /** Every byte that came back (latin1). */
  data: string;
  /** The server ended the connection (rather than the client giving up after `waitMs`). */
  closedByServer: boolean;
}

/**
 * Writes `pieces` on a new connection to `port`, `gapMs` apart, and collects everything that comes
 * back until the server closes or `waitMs` passes (then the client closes). A write refused
 * because the server already closed (EPIPE, ECONNRESET) is part of the answer, not an error.
 */
export function sendRaw(
  port: number,
  pieces: string | readonly string[],
  { waitMs = 3_000, gapMs = 300 } = {},
): Promise<RawReply> {
  const chunks = typeof pieces === 'string' ? [pieces] : pieces;
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    let closedByServer = false;
    const timer = setTimeout(() => socket.destroy(), waitMs);
    socket.on('data', (c: Buffer) => (data += c.toString('latin1')));
    socket.on('end', () => {
      closedByServer = true;
      socket.destroy();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE' || err.code === 'ECONNRESET') return;
      clearTimeout(timer);
      reject(err);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ data, closedByServer });
    });
    socket.once('connect', async () => {
      for (const [i, chunk] of chunks.entries()) {
        if (i > 0) await new Promise((r) => setTimeout(r, gapMs));
        if (!socket.destroyed && socket.writable) socket.write(chunk);
      }
    });
  });
}
