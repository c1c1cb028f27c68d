import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import type { JwtSettings } from '@slipway/config';

export interface JwtClaims {
  sub: string;
  org_id: string;
  tenant_id?: string;
  role?: string;
  /** Shown as who made a revision (else `email`, else nothing). */
  name?: unknown;
  email?: unknown;
}

/**
 * Verifies bearer JWTs against the configured issuer's JWKS (fetched and cached by jose): only
 * the allowed signature algorithms, the issuer, the audience when one is configured, and a
 * bounded age, so a token minted long ago stops working even if its `exp` is far away.
 */
export class JwtVerifier {
  private readonly jwks: ReturnType<typeof createRemoteJWKSet>;

  constructor(private readonly options: JwtSettings) {
    this.jwks = createRemoteJWKSet(new URL(options.jwksUrl), { timeoutDuration: 5_000 });
  }

  /** The claims of a valid token, or null for any invalid, expired or foreign one. */
  async verify(token: string): Promise<JwtClaims | null> {
    try {
      const { payload } = await jwtVerify(token, this.jwks, {
        issuer: this.options.issuer,
        algorithms: this.options.algorithms,
        // A token that never expires is a leaked credential waiting to happen: refuse it. `iat`
        // is what the maximum age is measured from.
        requiredClaims: ['exp', 'iat', 'sub'],
        maxTokenAge: this.options.maxTokenAgeSeconds,
        ...(this.options.audience ? { audience: this.options.audience } : {}),
      });
      return hasClaims(payload) ? payload : null;
    } catch {
      return null;
    }
  }
}

function hasClaims(payload: JWTPayload): payload is JWTPayload & JwtClaims {
  return typeof payload.sub === 'string' && typeof payload.org_id === 'string';
}

/** A compact JWS has three base64url segments; our API keys have none of those dots. */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
}
