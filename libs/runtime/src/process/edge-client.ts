import type { IncomingMessage } from 'node:http';
import type { Forwarded } from './forwarding.js';

/** The edge's token on each request it forwards to a serving proxy (libs/crypto edge-token.ts). */
export const EDGE_TOKEN_HEADER = 'x-slipway-edge';
/** The client address the edge saw, on each request it forwards to a serving proxy. */
export const EDGE_CLIENT_HEADER = 'x-slipway-client-address';

const clientAddresses = new WeakMap<IncomingMessage, string>();

/**
 * The address a request came from: the edge's word for it when the request came through the
 * edge (the serving proxy checked the edge's token), else the socket's peer. Rate limits and the
 * failed-authentication lockout count per this address.
 */
export function clientAddress(req: IncomingMessage): string | undefined {
  return clientAddresses.get(req) ?? req.socket.remoteAddress;
}

/**
 * How a serving proxy tells the instance who called: a request the edge forwarded (its token
 * checked by `trusted`) names the client address and scheme itself; any other request is its
 * socket's peer over plain HTTP. The edge's headers never reach the instance, and a caller that
 * forges them without the token is judged by its own socket.
 */
export function arrivedVia(
  req: IncomingMessage,
  trusted: ((token: string | undefined) => boolean) | undefined,
): Forwarded {
  const token = req.headers[EDGE_TOKEN_HEADER];
  const named = req.headers[EDGE_CLIENT_HEADER];
  delete req.headers[EDGE_TOKEN_HEADER];
  delete req.headers[EDGE_CLIENT_HEADER];
  if (token === undefined || !trusted?.(typeof token === 'string' ? token : undefined) || typeof named !== 'string') {
    return { address: req.socket.remoteAddress, proto: 'keep' };
  }
  clientAddresses.set(req, named);
  return { address: named, proto: req.headers['x-forwarded-proto'] === 'https' ? 'https' : 'http', appended: true };
}
