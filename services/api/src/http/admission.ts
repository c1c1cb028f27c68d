import type { Request, RequestHandler } from 'express';
import { addressKey, credentialId, credentialOf, type RateLimits } from '@slipway/access';
import { UnauthorizedError } from '@slipway/domain';
import type { Authenticator } from '../auth/authenticator.js';
import type { AdminRequirement, AuthRequirement, Principal } from '../auth/principal.js';

type Headers = Request['headers'];

/**
 * The client address a budget is kept for: `req.ip` (X-Forwarded-For only from the proxies
 * SLIPWAY_TRUST_PROXY trusts), an IPv4-mapped address as plain IPv4, and IPv6 by its /64.
 */
function clientAddress(req: Request): string {
  return addressKey(req.ip ?? req.socket.remoteAddress);
}

/** The budget an authenticated caller draws on: its key, or its JWT subject. */
function callerOf(principal: Principal): string {
  return principal.keyId ?? `jwt:${principal.organizationId}:${principal.subject}`;
}

/**
 * Who gets in, and what it costs them: the one entry of routes, Bull Board, /metrics and /docs.
 * A request without credentials is charged to its client address. One with credentials first
 * passes its credential's brute-force lockout, then is identified (a failure counts against the
 * credential and the address, and once either has failed too often the answer is 429 instead of
 * 401), charged to its key's budget (a listener agent's own, larger one), and only then checked
 * for workspace and role, so a caller's refused requests cost it too. A valid credential is never
 * refused for failures: not its own (it has none), not its address's.
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
    requirement: Exclude<AuthRequirement, 'none' | 'probe'>,
    admin: AdminRequirement = false,
    headers: Headers = req.headers,
  ): Promise<Principal> {
    const principal = await this.identify(req, headers);
    if (!principal) {
      await this.anonymous(req);
      throw new UnauthorizedError();
    }
    await this.limits.consume(principal.listenerId ? 'listener-agent' : 'key', callerOf(principal));
    await this.authenticator.authorize(principal, headers, requirement, admin);
    return principal;
  }

  /**
   * Who is calling, charging nothing: null without a credential. A bad credential is refused
   * (401, or 429 once it or its address failed too often) and counted like anywhere else.
   */
  async identify(req: Request, headers: Headers = req.headers): Promise<Principal | null> {
    const credential = credentialOf(headers);
    if (!credential) return null;
    const id = credentialId(credential);
    await this.limits.assertCredentialNotLockedOut(id);
    try {
      return await this.authenticator.identify(headers);
    } catch (err) {
      if (err instanceof UnauthorizedError) throw (await this.limits.recordAuthFailure(clientAddress(req), id)) ?? err;
      throw err;
    }
  }

  /** Middleware charging the client address, for sub-apps that take no credentials. */
  anonymousMiddleware(): RequestHandler {
    return async (req, _res, next) => {
      await this.anonymous(req);
      next();
    };
  }
}
