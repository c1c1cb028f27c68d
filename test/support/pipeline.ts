import { HttpClient } from './http.js';
import { killGroup, processesUnder } from './app-processes.js';
import { freePort } from './ports.js';
import { serviceEnv, startService, type ServiceProcess } from './service-process.js';
import { startTestApi, type TestApi } from './test-api.js';

/**
 * The whole control plane of an e2e file: api, builder, deployer and edge, each its own process,
 * as `npm start` runs them: deployments' `url`s are their names at the edge
 * (`http://<name>.localhost:<edge port>`), which clients resolve through the system.
 */
export interface Pipeline {
  /** The harness: this file's database, queue prefix and keys (its in-process api is not the one under test). */
  api: TestApi;
  apiProcess: ServiceProcess;
  builder: ServiceProcess;
  deployer: ServiceProcess;
  edge: ServiceProcess;
  /** A client of the api process, with the organization admin key. */
  http: HttpClient;
  stop: () => Promise<void>;
}

/**
 * Starts the api process first, then the builder and the deployer: three services loading at
 * once on a busy 2-core machine can take longer than a start is given.
 */
export async function startPipeline(given: Record<string, string>): Promise<Pipeline> {
  const env = { SLIPWAY_EDGE_HTTP_PORT: String(await freePort()), SLIPWAY_EDGE_HOST: '127.0.0.1', ...given };
  const api = await startTestApi(env);
  const port = await freePort();
  const apiProcess = await startService(
    'api',
    serviceEnv(api, { ...env, PORT: String(port), HOST: '127.0.0.1', SLIPWAY_BOOTSTRAP_API_KEY: api.adminKey }),
  );
  const [builder, deployer, edge] = await Promise.all([
    startService('builder', serviceEnv(api, env)),
    startService('deployer', serviceEnv(api, env)),
    startService('edge', serviceEnv(api, env)),
  ]);
  return {
    api,
    apiProcess,
    builder,
    deployer,
    edge,
    http: new HttpClient(`http://127.0.0.1:${port}`, api.adminKey),
    stop: async () => {
      await Promise.all([apiProcess.stop(), builder.stop(), deployer.stop(), edge.stop()]);
      // Deployed apps outlive a deployer by design: stop them with the file.
      for (const p of processesUnder(api.config.dataDir)) killGroup(p.pgrp);
      await api.close();
    },
  };
}
