import { deriveKey } from '@slipway/crypto';
import type { Config } from '@slipway/config';
import path from 'node:path';
import { REGISTRY_ISSUER, REGISTRY_SERVICE } from './token.js';

/** Secrets the registry and the api share, all derived from the secrets key (nothing more to keep). */
export interface RegistrySecrets {
  /** distribution's `http.secret` (signs its upload state): stable across restarts. */
  httpSecret: string;
  /** The bearer token the registry sends with its push events. */
  eventsToken: string;
  /** The platform's own credential: pull tokens for any repository (the deployer pulling images). */
  platformPassword: string;
}

export const PLATFORM_ACCOUNT = 'slipway-platform';

/**
 * distribution's own address: a unix socket in its storage dir (0700), so nothing reaches it
 * but through the push guard on the registry's address (push-guard.ts).
 */
export function backendSocket(config: Pick<Config, 'registry'>): string {
  const socket = path.join(config.registry.storageDir, 'distribution.sock');
  // sun_path holds 108 bytes with its NUL.
  if (Buffer.byteLength(socket) > 100)
    throw new Error(`SLIPWAY_REGISTRY_STORAGE_DIR is too long for the registry's unix socket (${socket})`);
  return socket;
}

/** distribution's `host:port` when it is not on the socket: SLIPWAY_REGISTRY_UPSTREAM_URL's, else the registry's own. */
function distributionAddress(registry: Config['registry'], listenHost: string): string {
  if (!registry.upstreamUrl) return `${listenHost}:${registry.port}`;
  const url = new URL(registry.upstreamUrl);
  return `${url.hostname}:${url.port || '80'}`;
}

export function registrySecrets(config: Pick<Config, 'secretsKey'>): RegistrySecrets {
  const derive = (purpose: string) => deriveKey(config.secretsKey.key, purpose).toString('base64url');
  return {
    httpSecret: derive('registry-http-secret'),
    eventsToken: derive('registry-events-token'),
    platformPassword: derive('registry-platform-credential'),
  };
}

/**
 * distribution's configuration (JSON, which its YAML parser reads): filesystem storage under
 * the data dir, token auth with Slipway as the issuer (nothing is pushed or pulled without a
 * token it signed), and push events posted to the api, which counts registry bytes from them.
 */
export function registryConfiguration(
  config: Pick<Config, 'registry' | 'secretsKey'>,
  certificateFile: string,
  options: { readOnly?: boolean; behindGuard?: boolean } = {},
): string {
  const { registry } = config;
  const listenHost =
    registry.host.includes(':') && !registry.host.startsWith('[') ? `[${registry.host}]` : registry.host;
  const secrets = registrySecrets(config);
  return JSON.stringify(
    {
      version: '0.1',
      log: { level: 'info', formatter: 'json', accesslog: { disabled: true } },
      storage: {
        filesystem: { rootdirectory: `${registry.storageDir}/storage` },
        delete: { enabled: true },
        // Read-only while garbage is swept (registry-gc.ts): pulls are served, pushes refused.
        maintenance: {
          uploadpurging: { enabled: true, age: '24h', interval: '1h', dryrun: false },
          readonly: { enabled: options.readOnly === true },
        },
      },
      // Behind `npm start`'s push guard (push-guard.ts), which takes the registry's address, on a
      // socket only the guard reaches; behind a guard of its own (`slipway registry-guard`: compose,
      // Kubernetes) on SLIPWAY_REGISTRY_UPSTREAM_URL; else (your own, unguarded) on the address itself.
      http: {
        ...(options.behindGuard
          ? { net: 'unix', addr: backendSocket(config) }
          : { addr: distributionAddress(registry, listenHost) }),
        secret: secrets.httpSecret,
        headers: { 'X-Content-Type-Options': ['nosniff'] },
      },
      auth: {
        token: {
          realm: registry.realm,
          service: REGISTRY_SERVICE,
          issuer: REGISTRY_ISSUER,
          rootcertbundle: certificateFile,
        },
      },
      notifications: {
        endpoints: [
          {
            name: 'slipway',
            url: registry.eventsUrl,
            headers: { Authorization: [`Bearer ${secrets.eventsToken}`] },
            timeout: '5s',
            threshold: 5,
            backoff: '2s',
            ignore: { actions: ['pull'] },
          },
        ],
      },
    },
    null,
    2,
  );
}
