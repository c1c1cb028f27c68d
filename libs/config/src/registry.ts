/**
 * The built-in image registry's settings (docs/operations.md, The image registry): the part of
 * the one environment schema about it, and what it becomes in Config.
 */
import path from 'node:path';
import Joi from 'joi';

export interface RegistrySettings {
  /** `auto`: `npm start` runs CNCF distribution (docker-registry) itself; `off`: the operator runs it. */
  mode: 'auto' | 'off';
  /** Where the registry listens (`npm start`'s own registry). */
  host: string;
  port: number;
  /** `host:port` clients push to: the start of every push token's `registry_url`. */
  publicAddress: string;
  /** How the control plane itself reaches the registry (tag resolution), e.g. `http://127.0.0.1:8130`. */
  internalUrl: string;
  /** Blobs and manifests, when `npm start` runs the registry. */
  storageDir: string;
  /** The ES256 key that signs registry tokens (PKCS#8 PEM); generated 0600 on first use when missing. */
  signingKeyFile: string;
  /** The registry's `auth.token.realm`: the api route that issues registry tokens. */
  realm: string;
  /** Where the registry posts its push events (registry bytes per workspace are counted from them). */
  eventsUrl: string;
  /** Lifetime of a deployment's push token (`POST /v2/deployments/{id}/push-token`). */
  pushTokenTtlSeconds: number;
  /** Lifetime of a registry token (the JWT the registry checks on each request). */
  tokenTtlSeconds: number;
  /** The `docker-registry` binary. */
  binary: string;
}

export const registrySchemaKeys = {
  SLIPWAY_REGISTRY: Joi.string().valid('auto', 'off').default('auto'),
  SLIPWAY_REGISTRY_HOST: Joi.string().default('127.0.0.1'),
  SLIPWAY_REGISTRY_PORT: Joi.number().integer().min(1).max(65535).default(8130),
  SLIPWAY_REGISTRY_PUBLIC_ADDRESS: Joi.string().pattern(/^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-fA-F:]+\](:\d{1,5})?$/),
  SLIPWAY_REGISTRY_URL: Joi.string().uri({ scheme: ['http', 'https'] }),
  SLIPWAY_REGISTRY_STORAGE_DIR: Joi.string(),
  SLIPWAY_REGISTRY_SIGNING_KEY_FILE: Joi.string(),
  SLIPWAY_REGISTRY_EVENTS_URL: Joi.string().uri({ scheme: ['http', 'https'] }),
  SLIPWAY_REGISTRY_BIN: Joi.string().default('docker-registry'),
  SLIPWAY_PUSH_TOKEN_TTL_SECONDS: Joi.number().integer().min(60).max(7 * 24 * 3600).default(3600),
  SLIPWAY_REGISTRY_TOKEN_TTL_SECONDS: Joi.number().integer().min(60).max(3600).default(300),
  SLIPWAY_SOURCE_NAMES: Joi.string().valid('canonical', 'hosted').default('canonical'),
};

const ANY_ADDRESS = new Set(['0.0.0.0', '::', '[::]']);

export function registrySettingsOf(value: Record<string, any>, dataDir: string, publicUrl: string): RegistrySettings {
  const host: string = value.SLIPWAY_REGISTRY_HOST;
  const port: number = value.SLIPWAY_REGISTRY_PORT;
  const reachable = ANY_ADDRESS.has(host) ? '127.0.0.1' : host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return {
    mode: value.SLIPWAY_REGISTRY,
    host,
    port,
    publicAddress: value.SLIPWAY_REGISTRY_PUBLIC_ADDRESS ?? `${reachable}:${port}`,
    internalUrl: (value.SLIPWAY_REGISTRY_URL ?? `http://${reachable}:${port}`).replace(/\/+$/, ''),
    storageDir: path.resolve(value.SLIPWAY_REGISTRY_STORAGE_DIR ?? path.join(dataDir, 'registry')),
    signingKeyFile: path.resolve(value.SLIPWAY_REGISTRY_SIGNING_KEY_FILE ?? path.join(dataDir, 'registry-signing.key')),
    realm: `${publicUrl}/v2/registry/token`,
    eventsUrl: value.SLIPWAY_REGISTRY_EVENTS_URL ?? `${publicUrl}/v2/registry/events`,
    pushTokenTtlSeconds: value.SLIPWAY_PUSH_TOKEN_TTL_SECONDS,
    tokenTtlSeconds: value.SLIPWAY_REGISTRY_TOKEN_TTL_SECONDS,
    binary: value.SLIPWAY_REGISTRY_BIN,
  };
}
