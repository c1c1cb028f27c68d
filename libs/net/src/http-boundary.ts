import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * The error boundary of every HTTP server that serves more than one tenant (the api, the serving
 * proxy): nothing a client sends may stop the process. A handler that throws, or whose promise
 * rejects, is answered here (400 when Node refused to pass on something the client sent, such as
 * a header value, else the server's `failureStatus`) and reported; requests Node's parser refuses
 * get a JSON error; CONNECT is refused. Every answer has the contract's `{detail}` body.
 */
export interface HttpBoundary {
  /** Plain requests. */
  request: (req: IncomingMessage, res: ServerResponse) => unknown;
  /** Upgrade requests (WebSockets); without one, Node answers them as plain requests. */
  upgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => unknown;
  /** Told of every failure the boundary answered; never of client mistakes Node's parser caught. */
  onError: (err: Error, req: IncomingMessage) => void;
  /** The status of a handler's failure that is not the client's (502 for a proxy, 500 for the api). */
  failureStatus?: number;
}

/** Error codes of Node refusing what came from the client (a header value, a path, a method). */
const CLIENT_INPUT_ERRORS = new Set([
  'ERR_HTTP_INVALID_HEADER_VALUE',
  'ERR_INVALID_CHAR',
  'ERR_INVALID_HTTP_TOKEN',
  'ERR_UNESCAPED_CHARACTERS',
  'ERR_INVALID_URL',
]);

/** Installs `boundary` on `server` (made with no request listener of its own). */
export function serveWithin(server: Server, boundary: HttpBoundary): Server {
  const statusOf = (err: unknown) =>
    CLIENT_INPUT_ERRORS.has((err as NodeJS.ErrnoException)?.code ?? '') ? 400 : (boundary.failureStatus ?? 500);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    contain(
      () => boundary.request(req, res),
      (err) => {
        boundary.onError(err, req);
        answerResponse(res, statusOf(err));
      },
    );
  });
  const upgrade = boundary.upgrade;
  if (upgrade) {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      // A socket error with no listener would be thrown: the boundary owns the socket from here.
      socket.on('error', () => socket.destroy());
      contain(
        () => upgrade(req, socket, head),
        (err) => {
          boundary.onError(err, req);
          answerSocket(socket, statusOf(err), 'The request could not be forwarded.', { method: req.method });
        },
      );
    });
  }
  // CONNECT turns a connection into a tunnel: never offered. Node would close it unanswered.
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    answerSocket(socket, 405, 'CONNECT is not supported.');
  });
  answerClientErrors(server);
  return server;
}

/** Runs `run`, sending a synchronous throw and a rejection alike to `fail` (once). */
function contain(run: () => unknown, fail: (err: Error) => void): void {
  const failOnce = (err: unknown) => {
    try {
      fail(err instanceof Error ? err : new Error(String(err)));
    } catch {
      // The answer itself failed (the socket is gone): nothing more to do for this request.
    }
  };
  try {
    const result = run();
    if (result instanceof Promise) result.catch(failOnce);
  } catch (err) {
    failOnce(err);
  }
}

function detailOf(status: number): string {
  return status === 400
    ? 'The request could not be forwarded: it carries a value that cannot be passed on.'
    : 'The request failed; try again.';
}

function answerResponse(res: ServerResponse, status: number): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  res
    .writeHead(status, { 'content-type': 'application/json', connection: 'close' })
    .end(JSON.stringify({ detail: detailOf(status) }));
}

/** What an answer on a raw socket carries besides its status and detail. */
export interface SocketAnswer {
  headers?: Record<string, string>;
  /** The request's method: a HEAD gets the head alone (RFC 9110 §9.3.2), or its client reads the body as the next answer. */
  method?: string;
}

/** A complete answer on a raw socket (upgrades, CONNECT), then the connection is closed. */
export function answerSocket(
  socket: Duplex,
  status: number,
  detail: string,
  { headers = {}, method }: SocketAnswer = {},
): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify({ detail });
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\ncontent-type: ` +
      `application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}connection: ` +
      `close\r\n\r\n${method === 'HEAD' ? '' : body}`,
  );
}

/**
 * Requests Node's HTTP parser refuses before any handler sees them (headers or URL over the size
 * limit, a malformed request line, a header timeout) still get the contract's JSON body
 * (every non-2xx body has `detail`) instead of Node's bare status line.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    // A response to HEAD has no body: a client would take one for the next response.
    const head = err.rawPacket?.toString('latin1', 0, 5) === 'HEAD ';
    const [status, detail] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request headers (or the URL) are larger than the server accepts.']
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'The request was not received in time.']
          : [400, 'The request could not be parsed.'];
    const body = JSON.stringify({ detail });
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${head ? '' : body}`,
    );
  });
}
