import { STATUS_CODES, type Server } from 'node:http';

/**
 * Requests Node's HTTP parser refuses before the app sees them (headers or URL over the size
 * limit, a malformed request line, a header timeout) still get the contract's JSON body
 * (docs/api.md, Errors: every non-2xx body has `detail`) instead of Node's bare status line.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket) => {
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
