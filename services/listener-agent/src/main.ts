/**
 * The listener agent: runs in a user's Kubernetes cluster (or anywhere with a kubeconfig),
 * polls its listener's desired state from the Slipway api, applies it in the cluster and
 * reports back (docs/architecture.md, listener agent). Entry file:
 * `node services/listener-agent/dist/main.js` (`tsx services/listener-agent/src/main.ts`).
 */
import { ConfigError, loadAgentConfig } from '@slipway/config';
import { createLogger, installShutdown } from '@slipway/logging';
import { ListenerAgent } from './agent.js';
import { Cluster } from './cluster.js';
import { ControlPlaneClient } from './control-plane.client.js';
import { DeploymentReconciler } from './deployment-reconciler.js';

function main(): void {
  let config;
  try {
    config = loadAgentConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger({ name: 'listener-agent', level: config.logLevel, secrets: [config.apiKey] });
  const cluster = new Cluster(config.kubeconfigPath);
  const agent = new ListenerAgent(config, new ControlPlaneClient(config), new DeploymentReconciler(cluster, log), log);
  installShutdown(log, [{ name: 'agent loop', run: () => agent.stop() }], config.shutdownTimeoutMs);
  agent.start();
  log.info(
    { listenerId: config.listenerId, apiUrl: config.apiUrl, kubeconfig: config.kubeconfigPath ?? 'in-cluster' },
    'listener-agent started',
  );
}

main();
