import { isIPv4 } from 'node:net';
import type { Request, RequestHandler } from 'express';
import { UnauthorizedError } from '@slipway/domain';
import { Authenticator } from '../auth/authenticator.js';
import type { AdminRequirement, AuthRequirement, Principal } from '../auth/principal.js';
import type { RateLimits } from './rate-limits.js';

type Headers = Request['headers'];

/**
 * The client address a budget is kept for: `req.ip` (X-Forwarded-For only from the proxies
 * SLIPWAY_TRUST_PROXY trusts), an IPv4-mapped address as plain IPv4, and IPv6 by its /64 (one
 * host gets a whole /64, so single addresses would be free for the taking).
 */
export function clientAddress(req: Request): string {
  const ip = req.ip ?? req.socket.remoteAddress ?? 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (isIPv4(ip) || !ip.includes(':')) return ip;
  return `${expandIPv6(ip).slice(0, 4).join(':')}::/64`;
}

function expandIPv6(ip: string): string[] {
  const [head = '', tail] = ip.split('%')[0]!.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array(Math.max(0, 8 - left.length - right.length)).fill('0');
  return [...left, ...zeros, ...right].map((group) => group.toLowerCase().replace(/^0+(?=.)/, ''));
}

/** The budget an authenticated caller draws on: its key, or its JWT subject. */
function callerOf(principal: Principal): string {
  return principal.keyId ?? `jwt:${principal.organizationId}:${principal.subject}`;
}

/**
 * Who gets in, and what it costs them: the one entry of routes, Bull Board, /metrics and /docs.
 * A request without credentials is charged to its client address; one with credentials first
 * passes the address's brute-force lockout, then is identified (a failure counts against the
 * address), charged to its key's budget (a listener agent's own, larger one), and only then
 * checked for workspace and role, so a caller's refused requests cost it too.
 */
export class Admission {
  constructor(
    private readonly authenticator: Authenticator,
    private readonly limits: RateLimits,
  ) {}

  /** For what takes no credentials: the client address pays. */
  async anonymous(req: Request): Promise<void> {
    await this.limits.consume('address', clientAddress(req));
  }

  /** Authenticates and charges a request, or throws the 401/403/404/422/429 that applies. */
  async authenticate(
    req: Request,
    requirement: Exclude<AuthRequirement, 'none'>,
    admin: AdminRequirement = false,
    headers: Headers = req.headers,
  ): Promise<Principal> {
    if (!Authenticator.hasCredential(headers)) {
      await this.anonymous(req);
      throw new UnauthorizedError();
    }
    const address = clientAddress(req);
    await this.limits.assertNotLockedOut(address);
    let principal: Principal;
    try {
      principal = await this.authenticator.identify(headers);
    } catch (err) {
      if (err instanceof UnauthorizedError) await this.limits.recordAuthFailure(address);
      throw err;
    }
    await this.limits.consume(principal.listenerId ? 'listener-agent' : 'key', callerOf(principal));
    await this.authenticator.authorize(principal, headers, requirement, admin);
    return principal;
  }

  /** Middleware charging the client address, for sub-apps that take no credentials. */
  anonymousMiddleware(): RequestHandler {
    return async (req, _res, next) => {
      await this.anonymous(req);
      next();
    };
  }
}
