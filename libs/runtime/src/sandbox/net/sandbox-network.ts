import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { Queryable } from '../../instance-types.js';
import { SandboxAddresses } from './addresses.js';
import type { DnsServer } from '@slipway/config';
import { DnsRelay, DEFAULT_DNS_RELAY_LIMITS, hostResolvers, type DnsRelayLimits } from './dns-relay.js';
import { egressRules, nft, NFT_TABLE, removeEgressRules, ruleNames, type EgressPolicy } from './egress-rules.js';
import {
  createLink,
  destroyLink,
  linkExists,
  namespaceNames,
  nsPathOf,
  prepareHost,
  removeHost,
  resolvConfOf,
} from './links.js';
import { parsePool, slotAddresses, slotOfName, type Pool } from './pool.js';

/** Where a sandbox's network is: what bubblewrap (nsenter) or runc (`linux.namespaces`) joins. */
export interface SandboxAttachment {
  /** The namespace's name (`ip netns`). */
  name: string;
  /** `/run/netns/<name>`. */
  nsPath: string;
  /** The sandbox's own address: the serving proxy and health probes connect here. */
  address: string;
  /** The host side of its veth: default route and DNS. */
  gateway: string;
  /** A resolv.conf naming the gateway, to show at /etc/resolv.conf inside. */
  resolvConf: string;
}

/** The IPv4 addresses the hosts of `urls` resolve to now (the control plane's stores). */
export async function storeAddresses(urls: string[]): Promise<string[]> {
  const found = new Set<string>();
  for (const url of urls) {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
    if (isIP(host) === 4) found.add(host);
    else if (!isIP(host))
      for (const a of await lookup(host, { all: true, family: 4 }).catch(() => [])) found.add(a.address);
  }
  return [...found];
}

/**
 * A network namespace of its own for every sandbox (docs/operations.md, Sandbox), independent of
 * what runs in it: `attach(owner)` gives a named namespace (persistent under /run/netns, so an
 * app outlives the process that made it and the next one adopts it) with a routed veth and a /30
 * of the pool recorded in Postgres; `detach(owner)` removes it all. The host's nftables rules
 * (egressRules) decide what a sandbox reaches; this process's DNS relay answers on the gateways
 * of the sandboxes it attached.
 */
export class SandboxNetwork {
  readonly pool: Pool;
  private readonly addresses: SandboxAddresses;
  private readonly relay: DnsRelay;

  constructor(
    db: Queryable,
    subnet: string,
    private readonly policy: EgressPolicy,
    /** The relay's bounds and resolvers (SLIPWAY_SANDBOX_DNS_SERVERS; none named: the host's). */
    dns: DnsRelayLimits & { servers?: DnsServer[] } = DEFAULT_DNS_RELAY_LIMITS,
  ) {
    this.relay = new DnsRelay(dns.servers?.length ? dns.servers : hostResolvers(), dns);
    this.pool = parsePool(subnet);
    this.addresses = new SandboxAddresses(db, this.pool);
  }

  /** Where the data-access fronts listen: the host's address in the pool. */
  get servicesAddress(): string {
    return this.pool.servicesAddress;
  }

  /** Forwarding, the services address and the rules; throws when the host cannot give them. */
  async apply(): Promise<void> {
    await prepareHost(this.pool);
    await nft(['-f', '-'], egressRules(this.pool, this.policy));
  }

  /** The owner's namespace: the existing one (adoption), or a new one on its claimed address. */
  async attach(owner: string): Promise<SandboxAttachment> {
    const s = slotAddresses(this.pool, await this.addresses.claim(owner));
    if (!linkExists(s)) {
      await this.purgeFronts(s.address);
      await createLink(s);
    }
    await this.relay.serve(s.gateway);
    return {
      name: s.name,
      nsPath: nsPathOf(s.name),
      address: s.address,
      gateway: s.gateway,
      resolvConf: resolvConfOf(s.name),
    };
  }

  /** Removes the owner's namespace, veth, front access and address (nothing held: nothing done). */
  async detach(owner: string): Promise<void> {
    const slot = await this.addresses.slotOf(owner);
    if (slot === null) return;
    const s = slotAddresses(this.pool, slot);
    await this.relay.stop(s.gateway);
    await this.purgeFronts(s.address);
    await destroyLink(s);
    await this.addresses.release(owner);
  }

  /** Lets the sandbox at `address` connect to these ports of the services address (its fronts). */
  async allowFronts(address: string, ports: number[]): Promise<void> {
    if (!ports.length) return;
    await nft([
      'add',
      'element',
      'inet',
      NFT_TABLE,
      ruleNames(this.pool).fronts,
      `{ ${ports.map((p) => `${address} . ${p}`).join(', ')} }`,
    ]);
  }

  /** Takes every front port from `address`. */
  private async purgeFronts(address: string): Promise<void> {
    const set = ruleNames(this.pool).fronts;
    const listed = JSON.parse(await nft(['-j', 'list', 'set', 'inet', NFT_TABLE, set])) as {
      nftables: { set?: { elem?: { concat: [string, number] }[] } }[];
    };
    const ports = listed.nftables
      .flatMap((e) => e.set?.elem ?? [])
      .flatMap((e) => (e.concat?.[0] === address ? [e.concat[1]] : []));
    if (ports.length)
      await nft([
        'delete',
        'element',
        'inet',
        NFT_TABLE,
        set,
        `{ ${ports.map((p) => `${address} . ${p}`).join(', ')} }`,
      ]).catch(() => undefined);
  }

  /**
   * At start: detaches every holder named `prefix…` that `isLive` denies, and removes namespaces
   * of the pool that nobody holds (left by a crash between steps).
   */
  async reap(prefix: string, isLive: (owner: string) => Promise<boolean>): Promise<string[]> {
    const reaped: string[] = [];
    const held = await this.addresses.held();
    for (const { owner } of held) {
      if (!owner.startsWith(prefix) || (await isLive(owner))) continue;
      await this.detach(owner);
      reaped.push(owner);
    }
    // Listed before the holders are read: a namespace made meanwhile is not among them.
    const names = await namespaceNames();
    const heldSlots = new Set((await this.addresses.held()).map((h) => h.slot));
    for (const name of names) {
      const slot = slotOfName(this.pool, name);
      if (slot !== null && !heldSlots.has(slot)) await destroyLink(slotAddresses(this.pool, slot));
    }
    return reaped;
  }

  /** Stops this process's DNS relay (the namespaces stay). */
  close(): Promise<void> {
    return this.relay.close();
  }
}

/** Removes a pool's rules, services interface and every namespace (tests; an installation keeps them). */
export async function removeSandboxPool(subnet: string): Promise<void> {
  const pool = parsePool(subnet);
  for (const name of await namespaceNames()) {
    const slot = slotOfName(pool, name);
    if (slot !== null) await destroyLink(slotAddresses(pool, slot));
  }
  await removeEgressRules(pool);
  await removeHost(pool);
}
