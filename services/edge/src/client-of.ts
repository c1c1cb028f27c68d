import type { IncomingMessage } from 'node:http';
import proxyAddr from 'proxy-addr';

/** Who sent a request to the edge: the client's address and the scheme it used. */
export interface Client {
  address: string | undefined;
  proto: 'http' | 'https';
  /** The `X-Forwarded-For` the app gets: the trusted chain and the peer, or the peer alone (a client's own list is no one's word). */
  forwardedFor: string | undefined;
}

/**
 * Reads a request's client as `SLIPWAY_EDGE_TRUST_PROXY` allows (the same values as Express's
 * `trust proxy`): `false`, the socket's peer and this listener's scheme; otherwise, behind
 * trusted proxies, the first untrusted address of `X-Forwarded-For` and the nearest trusted
 * proxy's `X-Forwarded-Proto`. An untrusted peer's forwarding headers count for nothing.
 */
export function clientReader(
  trust: boolean | number | string,
  scheme: 'http' | 'https',
): (req: IncomingMessage) => Client {
  const direct = (req: IncomingMessage): Client => ({
    address: req.socket.remoteAddress,
    proto: scheme,
    forwardedFor: req.socket.remoteAddress,
  });
  if (trust === false) return direct;
  const trusts: (addr: string, i: number) => boolean =
    trust === true
      ? () => true
      : typeof trust === 'number'
        ? (_addr, i) => i < trust
        : proxyAddr.compile(
            trust
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean),
          );
  return (req) => {
    const peer = req.socket.remoteAddress;
    if (!peer || !trusts(peer, 0)) return direct(req);
    const forwardedProto = String(req.headers['x-forwarded-proto'] ?? '')
      .split(',')[0]!
      .trim()
      .toLowerCase();
    const given = req.headers['x-forwarded-for'];
    return {
      address: proxyAddr(req, trusts),
      proto: forwardedProto === 'https' ? 'https' : forwardedProto === 'http' ? 'http' : scheme,
      forwardedFor: typeof given === 'string' && given.trim() ? `${given}, ${peer}` : peer,
    };
  };
}
