import { hashApiKey } from '@slipway/crypto';

type Headers = Record<string, string | string[] | undefined>;

const single = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** `X-Api-Key`, trimmed; undefined when absent or blank. */
const apiKeyHeader = (headers: Headers): string | undefined => single(headers['x-api-key'])?.trim() || undefined;
/** The token of `Authorization: Bearer <token>`. */
const bearerOf = (headers: Headers): string | undefined => BEARER.exec(single(headers.authorization) ?? '')?.[1];

/** The credential a request carries: `X-Api-Key`, else `Authorization: Bearer`. */
export function credentialOf(headers: Headers): string | undefined {
  return apiKeyHeader(headers) ?? bearerOf(headers);
}

/**
 * Removes a credential from request headers: `X-Api-Key` whatever it holds, and an
 * `Authorization` header only when it carried this very credential (a header of the app's own
 * scheme stays).
 */
export function stripCredential(headers: Headers, credential: string): void {
  delete headers['x-api-key'];
  if (bearerOf(headers) === credential) delete headers.authorization;
}

/** Every value a request carries where a Slipway key could be: `X-Api-Key` and `Authorization: Bearer`. */
export function credentialsIn(headers: Headers): string[] {
  return [...new Set([apiKeyHeader(headers), bearerOf(headers)].filter((c): c is string => !!c))];
}

/** Removes `credential` from whichever of `X-Api-Key` and `Authorization` carries it; other values stay. */
export function stripOnly(headers: Headers, credential: string): void {
  if (apiKeyHeader(headers) === credential) delete headers['x-api-key'];
  if (bearerOf(headers) === credential) delete headers.authorization;
}

/**
 * What failed authentications are counted under: a digest of the credential as presented. For
 * an API key this is its stored hash, so it names one key; a key that never existed counts only
 * against itself.
 */
export function credentialId(credential: string): string {
  return hashApiKey(credential);
}
