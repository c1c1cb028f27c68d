/**
 * The built-in image registry (docs/configuration.md, Image registry; docs/operations.md, The
 * image registry): its settings, and what they become in Config.
 */
import path from 'node:path';
import Joi from 'joi';
import { int, oneOf, optional, text, type ValuesOf } from './setting.js';

export const registrySettings = {
  /** `auto`: `npm start` runs CNCF distribution (docker-registry) itself; `off`: the operator runs it. */
  mode: oneOf(
    'SLIPWAY_REGISTRY',
    ['auto', 'off'],
    'auto',
    '`auto`: `npm start` runs the built-in image registry (CNCF distribution, `docker-registry`); `off`: ' +
      'you run it (docs/operations.md, The image registry)',
  ),
  host: text('SLIPWAY_REGISTRY_HOST', '127.0.0.1', 'where that registry listens'),
  port: int('SLIPWAY_REGISTRY_PORT', 8130, "that registry's port", { min: 1, max: 65535 }),
  publicAddress: optional(
    'SLIPWAY_REGISTRY_PUBLIC_ADDRESS',
    Joi.string().pattern(/^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-fA-F:]+\](:\d{1,5})?$/),
    "`host:port` clients push to: the start of every push token's `registry_url`",
    'the registry host (127.0.0.1 for a wildcard) and port',
  ),
  internalUrl: optional(
    'SLIPWAY_REGISTRY_URL',
    Joi.string().uri({ scheme: ['http', 'https'] }),
    'how the control plane reaches the registry (resolving tags to digests)',
    '`http://<host>:<port>` of the above',
  ),
  upstreamUrl: optional(
    'SLIPWAY_REGISTRY_UPSTREAM_URL',
    Joi.string().uri({ scheme: ['http'] }),
    'where distribution listens when the push guard runs on its own in front of it (`slipway registry-guard`; ' +
      "compose, Kubernetes): the guard takes the registry's host and port and forwards there",
    'none: `npm start` puts distribution on a unix socket behind its own guard',
  ),
  storageDir: optional(
    'SLIPWAY_REGISTRY_STORAGE_DIR',
    Joi.string(),
    "the registry's configuration and images",
    '`<data dir>/registry`',
  ),
  signingKeyFile: optional(
    'SLIPWAY_REGISTRY_SIGNING_KEY_FILE',
    Joi.string(),
    'ES256 key (PKCS#8 PEM) that signs registry tokens; created 0600 on first use; every api replica must share it',
    '`<data dir>/registry-signing.key`',
  ),
  eventsUrl: optional(
    'SLIPWAY_REGISTRY_EVENTS_URL',
    Joi.string().uri({ scheme: ['http', 'https'] }),
    'where the registry posts its push events (registry bytes are counted from them)',
    '`$SLIPWAY_PUBLIC_URL/v2/registry/events`',
  ),
  binary: text('SLIPWAY_REGISTRY_BIN', 'docker-registry', 'the distribution binary `npm start` runs'),
  pushTokenTtlSeconds: int(
    'SLIPWAY_PUSH_TOKEN_TTL_SECONDS',
    3600,
    'how long a push token (`POST /v2/deployments/{id}/push-token`) is valid (60 s to 7 days)',
    { min: 60, max: 7 * 24 * 3600 },
  ),
  tokenTtlSeconds: int(
    'SLIPWAY_REGISTRY_TOKEN_TTL_SECONDS',
    300,
    'how long a registry token (the JWT the registry checks on each request) is valid',
    {
      min: 60,
      max: 3600,
    },
  ),
};

type RegistryValues = ValuesOf<typeof registrySettings>;

/** Config's `registry`: every address and path resolved. */
export interface RegistrySettings
  extends Omit<
    RegistryValues,
    'publicAddress' | 'internalUrl' | 'upstreamUrl' | 'storageDir' | 'signingKeyFile' | 'eventsUrl'
  > {
  /** `host:port` clients push to. */
  publicAddress: string;
  /** How the control plane itself reaches the registry, e.g. `http://127.0.0.1:8130`. */
  internalUrl: string;
  /**
   * distribution's own address behind a separate push guard (`slipway registry-guard`), e.g. `http://127.0.0.1:5001`;
   * null under `npm start`.
   */
  upstreamUrl: string | null;
  storageDir: string;
  signingKeyFile: string;
  /** The registry's `auth.token.realm`: the api route that issues registry tokens. */
  realm: string;
  eventsUrl: string;
}

const ANY_ADDRESS = new Set(['0.0.0.0', '::', '[::]']);

export function registryOf(values: RegistryValues, dataDir: string, publicUrl: string): RegistrySettings {
  const { host, port } = values;
  const reachable = ANY_ADDRESS.has(host)
    ? '127.0.0.1'
    : host.includes(':') && !host.startsWith('[')
      ? `[${host}]`
      : host;
  return {
    ...values,
    publicAddress: values.publicAddress ?? `${reachable}:${port}`,
    internalUrl: (values.internalUrl ?? `http://${reachable}:${port}`).replace(/\/+$/, ''),
    upstreamUrl: values.upstreamUrl ? values.upstreamUrl.replace(/\/+$/, '') : null,
    storageDir: path.resolve(values.storageDir ?? path.join(dataDir, 'registry')),
    signingKeyFile: path.resolve(values.signingKeyFile ?? path.join(dataDir, 'registry-signing.key')),
    realm: `${publicUrl}/v2/registry/token`,
    eventsUrl: values.eventsUrl ?? `${publicUrl}/v2/registry/events`,
  };
}
