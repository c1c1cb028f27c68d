/**
 * Who may call and how much (docs/configuration.md, Access): JWT bearer tokens, request budgets,
 * and which user-supplied addresses the server may fetch.
 */
import { isIP } from 'node:net';
import Joi from 'joi';
import { listOf } from './lists.js';
import { int, optional, setting, type ValuesOf } from './setting.js';

/** Asymmetric JWS algorithms: a JWKS holds public keys, so HMAC (and `none`) never apply. */
export const JWT_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
] as const;

/** Bearer JWTs from one identity provider, verified against its JWKS. Config's `jwt` is null without an issuer. */
export const jwtSettings = {
  issuer: optional(
    'SLIPWAY_JWT_ISSUER',
    Joi.string().uri(),
    'accept JWT bearer tokens from this issuer (set `SLIPWAY_JWT_JWKS_URL` too)',
  ),
  jwksUrl: optional(
    'SLIPWAY_JWT_JWKS_URL',
    Joi.string().uri({ scheme: ['http', 'https'] }),
    "the issuer's JWKS, which verifies its tokens",
  ),
  /** Required `aud` when set. */
  audience: setting<string | null>('SLIPWAY_JWT_AUDIENCE', Joi.string(), 'required `aud` of those tokens', {
    read: (raw) => raw ?? null,
  }),
  /** Signature algorithms accepted; anything else (`none`, HMAC) is refused. */
  algorithms: setting<string[]>(
    'SLIPWAY_JWT_ALGORITHMS',
    Joi.string()
      .custom((value: string, helpers) =>
        listOf(value).length && listOf(value).every((a) => (JWT_ALGORITHMS as readonly string[]).includes(a))
          ? value
          : helpers.error('alg.invalid'),
      )
      .messages({ 'alg.invalid': `{{#label}} must be a comma-separated list of ${JWT_ALGORITHMS.join(', ')}` })
      .default(JWT_ALGORITHMS.join(',')),
    'signature algorithms accepted (asymmetric only)',
    { read: listOf },
  ),
  /** A token issued (`iat`) longer ago than this is refused, whatever its `exp`. */
  maxTokenAgeSeconds: int(
    'SLIPWAY_JWT_MAX_AGE_SECONDS',
    24 * 60 * 60,
    'a token issued (`iat`) longer ago is refused, whatever its `exp`',
    { min: 60 },
  ),
};

export interface JwtSettings extends Omit<ValuesOf<typeof jwtSettings>, 'issuer' | 'jwksUrl'> {
  issuer: string;
  jwksUrl: string;
}

/** The validated JWT part as Config's `jwt`: null unless an issuer is configured. */
export function jwtOf(values: ValuesOf<typeof jwtSettings>): JwtSettings | null {
  const { issuer, jwksUrl, ...rest } = values;
  return issuer && jwksUrl ? { issuer, jwksUrl, ...rest } : null;
}

const budget = (env: string, fallback: number, doc: string) => int(env, fallback, `${doc}; 0 turns it off`, { min: 0 });
const DAY_SECONDS = 24 * 60 * 60;

/** Request budgets (docs/api.md, Errors: 429 with Retry-After), shared by every api process through Redis. */
export const rateLimitSettings = {
  windowSeconds: int('SLIPWAY_RATE_LIMIT_WINDOW_SECONDS', 60, 'the window every request budget below counts in', {
    min: 1,
    max: DAY_SECONDS,
  }),
  /** Requests per API key (or JWT subject). */
  perKey: budget(
    'SLIPWAY_RATE_LIMIT_PER_KEY',
    1_200,
    'requests per window of each API key (or JWT subject), whatever it calls, refused requests, ' +
      "Bull Board and agent servers' serving URLs included",
  ),
  /** Requests per listener agent key: agents poll their desired state. */
  perListenerAgent: budget(
    'SLIPWAY_RATE_LIMIT_PER_LISTENER_AGENT',
    3_000,
    "requests per window of each listener agent's key (desired-state polls and reports)",
  ),
  /** Requests per client address that carry no credential. */
  perAddress: budget(
    'SLIPWAY_RATE_LIMIT_PER_ADDRESS',
    600,
    'requests per window of each client address without credentials (`/metrics`, `/docs`, `/openapi.json`, ' +
      "uploads, push webhooks, keyless requests to an agent server's serving URL, and 401s); " +
      'never `/healthz` or `/readyz`',
  ),
  /** Failed authentications per client address before it is locked out… */
  authFailures: budget(
    'SLIPWAY_RATE_LIMIT_AUTH_FAILURES',
    30,
    'failed authentications per credential and per client address within the lockout window: ' +
      'a credential past it gets 429 before it is looked up; an address past it gets 429 instead of 401 for ' +
      'credentials that fail, while a valid key from it still works',
  ),
  /** …for the rest of this window. */
  authFailureWindowSeconds: int(
    'SLIPWAY_RATE_LIMIT_AUTH_FAILURE_WINDOW_SECONDS',
    15 * 60,
    'the lockout window of failed authentications',
    {
      min: 1,
      max: DAY_SECONDS,
    },
  ),
};

export type RateLimitSettings = ValuesOf<typeof rateLimitSettings>;

/** `gitea.internal`, `10.0.0.5`, `10.0.0.0/8`, `fd00::/8`. */
function isOutboundHostEntry(entry: string): boolean {
  const [ip, prefix, extra] = entry.split('/');
  if (extra !== undefined) return false;
  const version = isIP(ip!);
  if (prefix !== undefined)
    return version !== 0 && /^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 6 ? 128 : 32);
  return (
    version !== 0 ||
    /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i.test(entry)
  );
}

/**
 * User-supplied URLs the server fetches (forge `api_url`s, outbound webhooks): hosts, IPs and
 * CIDR ranges that may be reached over plain http and at private addresses (@slipway/net).
 */
export const outboundSettings = {
  allowHosts: setting<string[]>(
    'SLIPWAY_OUTBOUND_ALLOW_HOSTS',
    Joi.string()
      .custom((value: string, helpers) =>
        listOf(value).every(isOutboundHostEntry) ? value : helpers.error('outbound.invalid'),
      )
      .messages({
        'outbound.invalid': '{{#label}} must be a comma-separated list of host names, IP addresses and CIDR ranges',
      }),
    'comma-separated host names, IPs and CIDR ranges that user-supplied URLs the server fetches ' +
      '(`github`/`gitea` `api_url`, clones, outbound webhooks, registries of `external_container` images) ' +
      'may reach over plain `http` or at private, loopback, link-local, CGNAT, ' +
      'unique-local or multicast addresses; everything else must be `https` to a public address ' +
      '(422 at create, refused again at every fetch, after DNS; no redirects; bodies capped)',
    { read: (raw?: string) => listOf(raw ?? ''), shown: 'none' },
  ),
};

/** Open event streams (docs/api.md, Events), counted in Redis across every api process. */
export const streamSettings = {
  sseStreamsPerKey: budget(
    'SLIPWAY_SSE_STREAMS_PER_KEY',
    20,
    'open Server-Sent Events streams (`/v2/events/stream`, log follows) per API key ' +
      '(or JWT subject) across every api process; one more gets 429 until one closes',
  ),
};
