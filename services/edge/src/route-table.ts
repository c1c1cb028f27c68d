import { EdgeRouteRepository, type DataSource, type EdgeRoute } from '@slipway/db';
import type { Logger } from '@slipway/logging';
import { UpstreamPool } from '@slipway/runtime';

/** A full read of every route this often, whatever the notifications said (a safety net: they can be lost). */
export const FULL_READ_MS = 60_000;

/** One name the edge serves: the deployment's serving proxy, through one keep-alive pool. */
export interface Destination {
  deploymentId: string;
  /** Empty until the deployment has a serving port (the edge answers 503 then). */
  pool: UpstreamPool;
}

/**
 * The edge's routing table: each deployment's name (its `edge_name`) and verified custom domains
 * to its serving proxy on the runtime host. Read whole at start, then one deployment again on each notification of a change
 * (`slipway_edge_routes`), whole again whenever the notification connection comes back and
 * every FULL_READ_MS. A lookup never waits on the database.
 */
export class RouteTable {
  /** Each routed deployment's destination: its pool is its own, whatever name or host it holds now. */
  private readonly destinations = new Map<string, Destination>();
  private readonly byName = new Map<string, Destination>();
  private readonly nameOf = new Map<string, string>();
  /** Verified custom domains, and each deployment's. */
  private readonly byHost = new Map<string, Destination>();
  private readonly hostsOf = new Map<string, readonly string[]>();

  /** Reads of routes, numbered as they start; and the number of the read each deployment's route was last applied from. */
  private reads = 0;
  private readonly appliedFrom = new Map<string, number>();
  /** The numbers of the reads under way (reads may overlap: a full read at reconnect, the timer's). */
  private readonly reading = new Set<number>();

  /** Where serving proxies are reached: the runtime owner's address, unless the operator fixed one. */
  private runtimeHost: string;

  constructor(
    private readonly dataSource: DataSource,
    /** `SLIPWAY_EDGE_UPSTREAM_HOST`: always this host; null: the runtime owner's address. */
    private readonly fixedHost: string | null,
    /** Before any deployer announced itself. */
    fallbackHost: string,
    private readonly log: Logger,
  ) {
    this.runtimeHost = fixedHost ?? fallbackHost;
  }

  get size(): number {
    return this.byName.size;
  }

  /** The deployment of a name under the apps domain. */
  lookup(edgeName: string): Destination | undefined {
    return this.byName.get(edgeName);
  }

  /** The deployment of a verified custom domain. */
  lookupHost(host: string): Destination | undefined {
    return this.byHost.get(host);
  }

  /** The deployment a host names: a verified custom domain, or a name one label under `suffix` (`.<apps domain>`). */
  destinationOf(host: string, suffix: string): Destination | undefined {
    if (!host.endsWith(suffix)) return this.lookupHost(host);
    const label = host.slice(0, -suffix.length);
    return label.includes('.') ? undefined : this.lookup(label);
  }

  /** Every verified custom domain routed now. */
  get customHosts(): string[] {
    return [...this.byHost.keys()];
  }

  /** Reads the runtime owner's address again; every destination follows a change. */
  async readOwner(): Promise<void> {
    if (this.fixedHost) return;
    const address = await new EdgeRouteRepository(this.dataSource.manager).ownerAddress();
    if (!address || address === this.runtimeHost) return;
    this.log.info(
      { from: this.runtimeHost, to: address },
      'edge: the runtime moved; serving proxies are reached at its new owner',
    );
    this.runtimeHost = address;
    for (const destination of this.destinations.values()) {
      const port = destination.pool.current[0]?.port;
      if (port) destination.pool.setTargets([{ host: address, port }]);
    }
  }

  /** Reads every route (and the runtime owner) again: names gone since are dropped. */
  async readAll(): Promise<void> {
    await this.readOwner();
    await this.underRead(async (read) => {
      const routes = await new EdgeRouteRepository(this.dataSource.manager).all();
      const seen = new Set<string>();
      for (const route of routes) {
        seen.add(route.deploymentId);
        this.apply(route.deploymentId, route, read);
      }
      for (const id of [...this.destinations.keys()]) if (!seen.has(id)) this.apply(id, null, read);
    });
    // Once a full read is done (not after every notification's read: the table is walked whole),
    // forget which read ended a deployment when no read older than that one is under way (such a
    // read could otherwise bring the deployment back).
    const oldest = Math.min(...this.reading);
    for (const [id, at] of this.appliedFrom) if (at < oldest && !this.destinations.has(id)) this.appliedFrom.delete(id);
  }

  /** Reads one deployment's route again (its name, port, or its end). */
  async readOne(deploymentId: string): Promise<void> {
    await this.underRead(async (read) =>
      this.apply(deploymentId, await new EdgeRouteRepository(this.dataSource.manager).one(deploymentId), read),
    );
  }

  /** Runs a read under a number of its own, kept while it is under way (readAll and readOne do; `read` applies what it read with that number). */
  async underRead(read: (n: number) => Promise<void>): Promise<void> {
    const n = ++this.reads;
    this.reading.add(n);
    try {
      await read(n);
    } finally {
      this.reading.delete(n);
    }
  }

  close(): void {
    for (const destination of this.destinations.values()) destination.pool.destroy();
    this.destinations.clear();
    this.byName.clear();
    this.nameOf.clear();
    this.byHost.clear();
    this.hostsOf.clear();
  }

  /**
   * One deployment's route as read (null: it has none any more). A name or custom domain is the
   * deployment's that was read holding it last: names are freed on delete and taken again, and a
   * full read can apply the new holder before the old one's end, which must then not take the
   * name, the host or the pool of the deployment that holds them now. `read` numbers the read it
   * comes from: a read that started before the one last applied for this deployment is older news
   * (a full read that took long, finishing after a notification's read), and is dropped.
   */
  apply(deploymentId: string, route: EdgeRoute | null, read = ++this.reads): void {
    if ((this.appliedFrom.get(deploymentId) ?? 0) > read) return;
    this.appliedFrom.set(deploymentId, read);
    let destination = this.destinations.get(deploymentId);
    const before = this.nameOf.get(deploymentId);
    if (before !== undefined && before !== route?.edgeName) {
      if (this.byName.get(before) === destination) this.byName.delete(before);
      this.nameOf.delete(deploymentId);
    }
    for (const host of this.hostsOf.get(deploymentId) ?? [])
      if (this.byHost.get(host) === destination) this.byHost.delete(host);
    this.hostsOf.delete(deploymentId);
    if (!route) {
      destination?.pool.destroy();
      this.destinations.delete(deploymentId);
      return;
    }
    if (!destination) {
      destination = { deploymentId, pool: new UpstreamPool() };
      this.destinations.set(deploymentId, destination);
    }
    for (const host of route.hosts) this.byHost.set(host, destination);
    if (route.hosts.length) this.hostsOf.set(deploymentId, route.hosts);
    const targets = route.servingPort ? [{ host: this.runtimeHost, port: route.servingPort }] : [];
    const current = destination.pool.current;
    if (
      current.length !== targets.length ||
      current[0]?.port !== targets[0]?.port ||
      current[0]?.host !== targets[0]?.host
    ) {
      destination.pool.setTargets(targets);
      this.log.debug({ deploymentId, edgeName: route.edgeName, servingPort: route.servingPort }, 'edge route');
    }
    this.byName.set(route.edgeName, destination);
    this.nameOf.set(deploymentId, route.edgeName);
  }
}
