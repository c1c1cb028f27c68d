import { randomUUID, sign, type KeyObject } from 'node:crypto';
import { libtrustKeyId } from './signing-key.js';

/** The registry's `auth.token.service` and `issuer`: the api signs for, and the registry expects, these. */
export const REGISTRY_SERVICE = 'slipway-registry';
export const REGISTRY_ISSUER = 'slipway';

/** `delete` is never granted to a caller of the token endpoint: only garbage collection signs it. */
export type RegistryAction = 'pull' | 'push' | 'delete';

/** One entry of a registry token's `access` claim (distribution's token spec). */
export interface RegistryAccess {
  type: 'repository';
  name: string;
  actions: RegistryAction[];
}

/** A requested `scope` parameter entry: `repository:<name>:pull,push`. */
export interface RequestedScope {
  type: string;
  name: string;
  actions: string[];
}

/**
 * `scope` query values (repeated, or several space-separated in one) as requested. The name
 * may hold a `:port` host part, so the type is the first field and the actions the last.
 */
export function parseScopes(values: readonly string[]): RequestedScope[] {
  const scopes: RequestedScope[] = [];
  for (const value of values) {
    for (const entry of value.split(' ').filter(Boolean)) {
      const first = entry.indexOf(':');
      const last = entry.lastIndexOf(':');
      if (first < 0 || last === first) continue;
      scopes.push({
        type: entry.slice(0, first),
        name: entry.slice(first + 1, last),
        actions: entry
          .slice(last + 1)
          .split(',')
          .filter(Boolean),
      });
    }
  }
  return scopes;
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

export interface SignedRegistryToken {
  token: string;
  expiresIn: number;
  issuedAt: Date;
}

/**
 * A registry token (JWT, ES256) distribution 2.8 accepts: `kid` the libtrust key id of the
 * signing key, `aud` a string, the signature raw r||s.
 */
export function signRegistryToken(
  key: KeyObject,
  input: { subject: string; access: RegistryAccess[]; ttlSeconds: number; now?: Date },
): SignedRegistryToken {
  const issuedAt = input.now ?? new Date();
  const iat = Math.floor(issuedAt.getTime() / 1000);
  const header = { typ: 'JWT', alg: 'ES256', kid: libtrustKeyId(key) };
  const claims = {
    iss: REGISTRY_ISSUER,
    sub: input.subject,
    aud: REGISTRY_SERVICE,
    iat,
    nbf: iat,
    exp: iat + input.ttlSeconds,
    jti: randomUUID(),
    access: input.access,
  };
  const signingInput = `${b64url(header)}.${b64url(claims)}`;
  const signature = sign('sha256', Buffer.from(signingInput), { key, dsaEncoding: 'ieee-p1363' });
  return { token: `${signingInput}.${signature.toString('base64url')}`, expiresIn: input.ttlSeconds, issuedAt };
}
