import { hashApiKey } from '@slipway/crypto';

type Headers = Record<string, string | string[] | undefined>;

const single = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The credential a request carries: `X-Api-Key`, else `Authorization: Bearer`. */
export function credentialOf(headers: Headers): string | undefined {
  const apiKey = single(headers['x-api-key'])?.trim();
  if (apiKey) return apiKey;
  return BEARER.exec(single(headers.authorization) ?? '')?.[1];
}

/**
 * Removes a credential from request headers: `X-Api-Key` whatever it holds, and an
 * `Authorization` header only when it carried this very credential (a header of the app's own
 * scheme stays).
 */
export function stripCredential(headers: Headers, credential: string): void {
  delete headers['x-api-key'];
  if (BEARER.exec(single(headers.authorization) ?? '')?.[1] === credential) delete headers.authorization;
}

/** Every value a request carries where a Slipway key could be: `X-Api-Key` and `Authorization: Bearer`. */
export function credentialsIn(headers: Headers): string[] {
  const found = [single(headers['x-api-key'])?.trim(), BEARER.exec(single(headers.authorization) ?? '')?.[1]].filter((c): c is string => !!c);
  return found.length === 2 && found[0] === found[1] ? [found[0]!] : found;
}

/** Removes `credential` from whichever of `X-Api-Key` and `Authorization` carries it; other values stay. */
export function stripOnly(headers: Headers, credential: string): void {
  if (single(headers['x-api-key'])?.trim() === credential) delete headers['x-api-key'];
  if (BEARER.exec(single(headers.authorization) ?? '')?.[1] === credential) delete headers.authorization;
}

/**
 * What failed authentications are counted under: a digest of the credential as presented. For
 * an API key this is its stored hash, so it names one key; a key that never existed counts only
 * against itself.
 */
export function credentialId(credential: string): string {
  return hashApiKey(credential);
}
