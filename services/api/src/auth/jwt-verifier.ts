import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';

export interface JwtClaims {
  sub: string;
  org_id: string;
  tenant_id?: string;
  role?: string;
}

export interface JwtVerifierOptions {
  issuer: string;
  jwksUrl: string;
  audience: string | null;
}

/** Verifies bearer JWTs against the configured issuer's JWKS (fetched and cached by jose). */
export class JwtVerifier {
  private readonly jwks: ReturnType<typeof createRemoteJWKSet>;

  constructor(private readonly options: JwtVerifierOptions) {
    this.jwks = createRemoteJWKSet(new URL(options.jwksUrl), { timeoutDuration: 5_000 });
  }

  /** The claims of a valid token, or null for any invalid, expired or foreign one. */
  async verify(token: string): Promise<JwtClaims | null> {
    try {
      const { payload } = await jwtVerify(token, this.jwks, {
        issuer: this.options.issuer,
        // A token that never expires is a leaked credential waiting to happen: refuse it.
        requiredClaims: ['exp', 'sub'],
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
