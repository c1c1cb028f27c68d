import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRegistry, type RunningRegistry } from '@slipway/registry';
import { freePort } from './ports.js';
import { entryArgs, serviceEnv } from './service-process.js';
import { startTestApi, type TestApi } from './test-api.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * A test api and its own real registry (CNCF distribution, `docker-registry`) on ports of this
 * test file alone, with storage under the api's data dir: the realm and the event sink are the
 * api's public URL, so PORT is fixed (a free port) rather than ephemeral.
 */
export interface RegistryStand {
  api: TestApi;
  registry: RunningRegistry;
  /** `127.0.0.1:<port>`: the registry's public address. */
  address: string;
  close: () => Promise<void>;
}

export async function startRegistryStand(env: Record<string, string> = {}): Promise<RegistryStand> {
  const [apiPort, registryPort] = [await freePort(), await freePort()];
  const api = await startTestApi({ PORT: String(apiPort), SLIPWAY_REGISTRY_PORT: String(registryPort), ...env });
  let registry: RunningRegistry;
  try {
    registry = await startRegistry(api.config);
  } catch (err) {
    await api.close();
    throw err;
  }
  const stand: RegistryStand = {
    api,
    registry,
    address: api.config.registry.publicAddress,
    // The registry a test may have replaced (stopped and started again), not the first one.
    close: async () => {
      await stand.registry.stop();
      await api.close();
    },
  };
  return stand;
}

/** `npm start`'s registry supervisor (services/registry/src/main.ts), running for a test api. */
export interface RegistrySupervisor {
  /** Its environment, for other commands of the same installation (`pnpm slipway registry gc`). */
  env: Record<string, string>;
  /** What it printed on stderr so far (its JSON log lines). */
  said: () => string;
  /** The docker-registry it runs now: its one child process. */
  registryPid: () => number;
  stop: () => Promise<void>;
}

/** Starts the supervisor for `api` (its registry port and storage, and `extra` variables); it answers once the registry does. */
export function startRegistrySupervisor(api: TestApi, extra: Record<string, string> = {}): RegistrySupervisor {
  const env = serviceEnv(api, {
    PORT: String(api.config.port),
    SLIPWAY_REGISTRY_PORT: String(api.config.registry.port),
    ...extra,
  });
  const child = spawn(process.execPath, entryArgs('registry'), {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let said = '';
  // Its own log lines (stdout) and docker-registry's (stderr).
  const hear = (b: Buffer) => (said += b.toString());
  child.stdout!.on('data', hear);
  child.stderr!.on('data', hear);
  const exited = new Promise((r) => child.once('exit', r));
  return {
    env,
    said: () => said,
    registryPid: () =>
      Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/)[0]),
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
