/**
 * The one place that reads the environment. Every process parses it once, through one joi
 * schema built from the settings' declarations (setting.ts), into a frozen typed object; a bad
 * environment fails fast with every problem listed. docs/configuration.md is generated from the
 * same declarations (reference.ts).
 */
import path from 'node:path';
import Joi from 'joi';
import { jwtOf, jwtSettings, outboundSettings, rateLimitSettings, streamSettings, type JwtSettings } from './access.js';
import { ConfigError } from './config-error.js';
import { domainSettings } from './domains.js';
import { edgeSettings } from './edge.js';
import { secureDataDir } from './data-dir.js';
import { validateEnvironment } from './environment.js';
import { ceilingSettings, deploymentDbSettings, quotaSettings } from './limits.js';
import { pipelineSettings, retentionSettings, webhookSettings } from './pipeline.js';
import { registryOf, registrySettings, type RegistrySettings } from './registry.js';
import { runtimeOf, runtimeSettings, sandboxOf, sandboxSettings, type RuntimeSettings } from './sandbox.js';
import { resolveSecretsKey, secretsSettings, type SecretsKey } from './secrets-key.js';
import { derivedInputs, serverSettings } from './server.js';
import { schemaKeysOf, valuesOf, type ValuesOf } from './setting.js';

/** Every setting of the control plane's processes, nested as Config nests them. */
export const controlPlaneSettings = {
  ...serverSettings,
  ...derivedInputs,
  ...secretsSettings,
  ...deploymentDbSettings,
  ...streamSettings,
  jwt: jwtSettings,
  rateLimit: rateLimitSettings,
  outbound: outboundSettings,
  pipeline: pipelineSettings,
  webhooks: webhookSettings,
  retention: retentionSettings,
  runtime: runtimeSettings,
  quotas: quotaSettings,
  ceilings: ceilingSettings,
  sandbox: sandboxSettings,
  registry: registrySettings,
  edge: edgeSettings,
  domains: domainSettings,
};

type Values = ValuesOf<typeof controlPlaneSettings>;

/** The validated environment. Parts computed from several settings are typed here; the rest comes from the declarations. */
export interface Config
  extends Omit<Values, 'publicUrl' | 'secretsKey' | 'jwt' | 'runtime' | 'registry' | 'agentServerHostCache'> {
  publicUrl: string;
  agentServerHostCache: string;
  secretsKey: SecretsKey;
  jwt: JwtSettings | null;
  runtime: RuntimeSettings;
  registry: RegistrySettings;
}

const schema = Joi.object(schemaKeysOf(controlPlaneSettings))
  .and('SLIPWAY_JWT_ISSUER', 'SLIPWAY_JWT_JWKS_URL')
  .and('SLIPWAY_TLS_CERT_FILE', 'SLIPWAY_TLS_KEY_FILE')
  .unknown(true);

/** Parses an environment into a frozen Config. Pure apart from the dev secrets-key file. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Readonly<Config> {
  const values = valuesOf(controlPlaneSettings, validateEnvironment(schema, env));
  const dataDir = path.resolve(values.dataDir);
  const publicUrl = (values.publicUrl ?? `http://127.0.0.1:${values.port}`).replace(/\/+$/, '');
  const config: Config = {
    ...values,
    dataDir,
    publicUrl,
    agentServerHostCache: path.resolve(values.agentServerHostCache ?? path.join(dataDir, 'cache', 'agent-server-host')),
    secretsKey: resolveSecretsKey(values.secretsKey, values.nodeEnv, dataDir),
    jwt: jwtOf(values.jwt),
    runtime: runtimeOf(values.runtime),
    sandbox: sandboxOf(values.sandbox),
    registry: registryOf(values.registry, dataDir, publicUrl),
  };
  return deepFreeze(config);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Buffer.isBuffer(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

let cached: Readonly<Config> | undefined;

/** The process-wide config, parsed on first use. */
export function getConfig(): Readonly<Config> {
  cached ??= loadConfig();
  return cached;
}

/**
 * For process entry points: the config (with the data dir secured, see `secureDataDir`), or a
 * clear list of what is wrong on stderr and exit code 2 (a configuration error, not a crash).
 */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Readonly<Config> {
  try {
    const config = loadConfig(env);
    // Every service entry closes the data dir to anyone but the control plane's user.
    secureDataDir(config.dataDir);
    return config;
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

export { ConfigError };
export type { NodeEnv } from './server.js';
export type { SecretsKey } from './secrets-key.js';
export { JWT_ALGORITHMS, type JwtSettings, type RateLimitSettings } from './access.js';
export type { PipelineTimings, RetentionSettings } from './pipeline.js';
export type { RegistrySettings } from './registry.js';
export type { EdgeSettings } from './edge.js';
export type { DnsServer, RuntimeSettings, SandboxSettings } from './sandbox.js';
export { loadAgentConfig, type AgentConfig } from './agent.js';
export { secureDataDir } from './data-dir.js';
export { ServingUrls, type ServedDeployment } from './serving-urls.js';
export { platformCredentials, urlPasswords } from './credentials.js';
