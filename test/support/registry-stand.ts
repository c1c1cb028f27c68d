import { startRegistry, type RunningRegistry } from '@slipway/registry';
import { freePort } from './ports.js';
import { startTestApi, type TestApi } from './test-api.js';

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
