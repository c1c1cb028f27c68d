import type { Logger } from '@slipway/logging';
import type { IncomingMessage } from 'node:http';
import {
  ServingProxy,
  type AccessDenial,
  type InstanceRecord,
  type ProcessRuntime,
  type RequestOutcome,
} from '@slipway/runtime';
import type { ServingAuth } from '../serving-auth.js';

/**
 * Per deployment: its serving proxy on the stable `serving_port`, and the instances the proxy
 * sends traffic to (only healthy ones).
 */
export class Traffic {
  private readonly proxies = new Map<string, ServingProxy>();
  private readonly starts = new Map<string, Promise<ServingProxy>>();
  private readonly serving = new Map<string, Map<string, InstanceRecord>>();

  constructor(
    private readonly runtime: ProcessRuntime,
    private readonly log: Logger,
    /** Who may call a deployment's serving URL. */
    private readonly auth: ServingAuth,
    /** Told of every request a deployment's proxy answered (per-deployment metrics). */
    private readonly onRequest: (deploymentId: string, outcome: RequestOutcome) => void = () => undefined,
    /**
     * Told of every request (or upgrade) the deployment's proxy let through to its instances,
     * health probes (`GET /ok`) aside: real use of the deployment (DeploymentActivity).
     */
    private readonly onAdmitted: (deploymentId: string) => void = () => undefined,
    /** Whether a request carries the edge's token (it then names its client's address and scheme). */
    private readonly trustsEdge?: (token: string | undefined) => boolean,
  ) {}

  /** The instances receiving traffic (a live view: change it through the methods below). */
  targets(deploymentId: string): ReadonlyMap<string, InstanceRecord> {
    return this.serving.get(deploymentId) ?? new Map();
  }

  has(deploymentId: string, instanceId: string): boolean {
    return this.serving.get(deploymentId)?.has(instanceId) ?? false;
  }

  /** Replaces the set of instances receiving traffic; returns the previous set. */
  replace(deploymentId: string, instances: Iterable<InstanceRecord>): Map<string, InstanceRecord> {
    const before = this.serving.get(deploymentId) ?? new Map<string, InstanceRecord>();
    this.serving.set(deploymentId, new Map([...instances].map((i) => [i.id, i])));
    this.refresh(deploymentId);
    return before;
  }

  add(instance: InstanceRecord): void {
    const serving = this.serving.get(instance.deploymentId) ?? new Map<string, InstanceRecord>();
    this.serving.set(instance.deploymentId, serving);
    serving.set(instance.id, instance);
    this.refresh(instance.deploymentId);
  }

  remove(deploymentId: string, instanceId: string): void {
    if (this.serving.get(deploymentId)?.delete(instanceId)) this.refresh(deploymentId);
  }

  ensureProxy(deploymentId: string): Promise<ServingProxy> {
    const open = this.proxies.get(deploymentId);
    if (open) return Promise.resolve(open);
    let starting = this.starts.get(deploymentId);
    if (!starting) {
      starting = (async () => {
        const port = await this.runtime.servingPort(deploymentId);
        const proxy = new ServingProxy({
          host: this.runtime.host,
          port,
          onError: (err, target) =>
            this.log.warn({ err, deploymentId, target }, 'serving proxy: the instance did not answer'),
          onFault: (err) =>
            this.log.error(
              { err, deploymentId },
              'serving proxy: a request failed in the proxy itself (answered; kept serving)',
            ),
          authorize: this.admitting(deploymentId),
          onRequest: (outcome) => this.onRequest(deploymentId, outcome),
          trustsEdge: this.trustsEdge,
        });
        await proxy.listen();
        this.proxies.set(deploymentId, proxy);
        this.refresh(deploymentId);
        this.log.info({ deploymentId, port }, 'serving proxy listening');
        return proxy;
      })().finally(() => this.starts.delete(deploymentId));
      this.starts.set(deploymentId, starting);
    }
    return starting;
  }

  /** Closes the deployment's proxy and forgets its targets (teardown). */
  async close(deploymentId: string): Promise<void> {
    const proxy = this.proxies.get(deploymentId) ?? (await this.starts.get(deploymentId)?.catch(() => undefined));
    this.proxies.delete(deploymentId);
    this.serving.delete(deploymentId);
    await proxy?.close();
  }

  /** Closes every proxy (shutdown, lost lock); instances are not touched. */
  async closeAll(): Promise<void> {
    const proxies = [...this.proxies.values()];
    this.proxies.clear();
    this.serving.clear();
    await Promise.allSettled(proxies.map((p) => p.close()));
  }

  /** The serving rules of the deployment, telling `onAdmitted` of what they let through. */
  private admitting(deploymentId: string): (req: IncomingMessage) => Promise<AccessDenial | null> {
    const authorize = this.auth.forDeployment(deploymentId);
    return async (req) => {
      const denial = await authorize(req);
      // A monitor polling /ok is not use: it would keep an abandoned deployment from UNUSED forever.
      if (!denial && !isHealthProbe(req)) this.onAdmitted(deploymentId);
      return denial;
    };
  }

  private refresh(deploymentId: string): void {
    const proxy = this.proxies.get(deploymentId);
    const serving = this.serving.get(deploymentId);
    proxy?.setTargets(
      [...(serving?.values() ?? [])].map((r) => ({ host: this.runtime.instanceHost(r), port: r.port })),
    );
  }
}

/** `GET /ok` (any query): what uptime monitors and load balancers call. */
function isHealthProbe(req: IncomingMessage): boolean {
  return req.method === 'GET' && (req.url ?? '').split('?')[0] === '/ok';
}
