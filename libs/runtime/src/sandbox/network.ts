import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Our own nftables table; nothing else is ever touched. */
export const NFT_TABLE = 'slipway_sandbox';

/**
 * The nftables rules (as an `nft -f` script) that confine the uids `min`–`max`:
 * - outbound: no connection to a local address (loopback and the host's own: Postgres, Redis,
 *   the api, workers' health ports, other apps) except the (uid, port) pairs in the range's
 *   allow-set, DNS, and nothing to link-local addresses (cloud metadata). Everything else
 *   outbound stays open.
 * - inbound: the ports of the range's instances (the instance-port set) take connections to a
 *   loopback address only. An app that binds 0.0.0.0 instead of 127.0.0.1 is still not reachable
 *   from other hosts, nor through this host's other addresses: the way in is its serving proxy,
 *   which checks the workspace key. The set holds instance ports only (they share the runtime's
 *   port range with the serving proxies, which may listen on every interface).
 * Chains and sets are named after the range, so installations (and tests) with disjoint ranges
 * never meet; re-applying replaces the chains' rules and keeps the sets' elements.
 */
export function confinementRules(min: number, max: number): string {
  const { chain, set, inputChain, instancePorts } = names(min, max);
  const uids = `meta skuid ${min}-${max}`;
  const toInstance = `tcp dport @${instancePorts}`;
  return [
    `add table inet ${NFT_TABLE}`,
    `add set inet ${NFT_TABLE} ${set} { type uid . inet_service; }`,
    `add set inet ${NFT_TABLE} ${instancePorts} { type inet_service; }`,
    `add chain inet ${NFT_TABLE} ${inputChain} { type filter hook input priority 0; policy accept; }`,
    `flush chain inet ${NFT_TABLE} ${inputChain}`,
    `add rule inet ${NFT_TABLE} ${inputChain} ${toInstance} ip daddr 127.0.0.0/8 accept`,
    `add rule inet ${NFT_TABLE} ${inputChain} ${toInstance} ip6 daddr ::1 accept`,
    `add rule inet ${NFT_TABLE} ${inputChain} ${toInstance} drop`,
    `add chain inet ${NFT_TABLE} ${chain} { type filter hook output priority 0; policy accept; }`,
    `flush chain inet ${NFT_TABLE} ${chain}`,
    // Replies of the app's own server (the proxy's and probes' connections) are not new ones.
    `add rule inet ${NFT_TABLE} ${chain} ${uids} ct state established,related accept`,
    `add rule inet ${NFT_TABLE} ${chain} ${uids} ip daddr 169.254.0.0/16 drop`,
    `add rule inet ${NFT_TABLE} ${chain} ${uids} ip6 daddr fe80::/10 drop`,
    `add rule inet ${NFT_TABLE} ${chain} ${uids} meta l4proto tcp meta skuid . tcp dport @${set} fib daddr type local accept`,
    `add rule inet ${NFT_TABLE} ${chain} ${uids} meta l4proto { tcp, udp } th dport 53 fib daddr type local accept`,
    `add rule inet ${NFT_TABLE} ${chain} ${uids} fib daddr type local drop`,
    '',
  ].join('\n');
}

function names(min: number, max: number): { chain: string; set: string; inputChain: string; instancePorts: string } {
  return { chain: `out_${min}_${max}`, set: `allow_${min}_${max}`, inputChain: `in_${min}_${max}`, instancePorts: `instances_${min}_${max}` };
}

async function nft(args: string[], input?: string): Promise<void> {
  if (input === undefined) {
    await run('nft', args);
    return;
  }
  await new Promise<void>((resolve, reject) => {
    const child = execFile('nft', args, (err) => (err ? reject(err) : resolve()));
    child.stdin!.end(input);
  });
}

/** Network confinement of a uid range with nftables (`meta skuid` applies inside bubblewrap). */
export class NetworkConfinement {
  constructor(
    private readonly min: number,
    private readonly max: number,
  ) {}

  /** Installs (or refreshes) the range's rules; throws when nftables cannot be used. */
  async apply(): Promise<void> {
    await nft(['-f', '-'], confinementRules(this.min, this.max));
  }

  /** Lets `uid` connect to these local ports. */
  async allow(uid: number, ports: number[]): Promise<void> {
    if (!ports.length) return;
    const { set } = names(this.min, this.max);
    await nft(['add', 'element', 'inet', NFT_TABLE, set, `{ ${ports.map((p) => `${uid} . ${p}`).join(', ')} }`]);
  }

  /** Takes those ports back (missing ones are ignored). */
  async revoke(uid: number, ports: number[]): Promise<void> {
    const { set } = names(this.min, this.max);
    for (const port of ports) await nft(['delete', 'element', 'inet', NFT_TABLE, set, `{ ${uid} . ${port} }`]).catch(() => undefined);
  }

  /** Marks `port` an instance's: it takes connections to loopback addresses only. */
  async guardInstancePort(port: number): Promise<void> {
    await nft(['add', 'element', 'inet', NFT_TABLE, names(this.min, this.max).instancePorts, `{ ${port} }`]);
  }

  /** The port is no instance's any more (a missing one is ignored). */
  async releaseInstancePort(port: number): Promise<void> {
    await nft(['delete', 'element', 'inet', NFT_TABLE, names(this.min, this.max).instancePorts, `{ ${port} }`]).catch(() => undefined);
  }

  /** Removes the range's chains and sets (tests; an installation keeps them). */
  async remove(): Promise<void> {
    const { chain, set, inputChain, instancePorts } = names(this.min, this.max);
    for (const [kind, name] of [
      ['chain', chain],
      ['chain', inputChain],
      ['set', set],
      ['set', instancePorts],
    ] as const) {
      await nft(['delete', kind, 'inet', NFT_TABLE, name]).catch(() => undefined);
    }
  }
}
