import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { HOST_LINK_PREFIX, type Pool } from './pool.js';

const run = promisify(execFile);

/** Our own nftables table (host side and inside each sandbox namespace); nothing else is touched. */
export const NFT_TABLE = 'slipway_sandbox';

/** Never reachable from a sandbox (unless allow-listed): private, shared, loopback, link-local, multicast, reserved. */
export const DENIED_RANGES = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '224.0.0.0/3',
];

export interface EgressPolicy {
  /** Operator allow-list (SLIPWAY_SANDBOX_ALLOW_CIDRS), checked before the default-deny. */
  allowCidrs: string[];
  /** The control plane's stores (resolved DATABASE_URL and REDIS_URL hosts): never reachable. */
  storeAddresses: string[];
}

export function ruleNames(pool: Pool) {
  const t = pool.tag;
  return {
    input: `in_${t}`,
    forward: `fwd_${t}`,
    nat: `nat_${t}`,
    fronts: `fronts_${t}`,
    allow: `allow_${t}`,
    stores: `stores_${t}`,
  };
}

/**
 * The host's rules for the sandboxes of `pool` (an `nft -f` script). Every sandbox lives in a
 * network namespace of its own behind a routed veth; its traffic either enters the host (input)
 * or is routed on (forward):
 * - input: only the data-access fronts (per sandbox address and front port, the fronts set, on
 *   the pool's services address) and DNS (the relay on the gateways); every other host address
 *   and port, loopback included, is dropped.
 * - forward: nothing new into a sandbox (from another sandbox or anywhere else); out of one, the
 *   control plane's store addresses are dropped, then the operator's allow-list is accepted,
 *   then private, shared, loopback, link-local, multicast and reserved ranges are dropped, and
 *   the rest (the public internet) is accepted and masqueraded.
 * - a source address of the pool is only believed on the interface its route leaves by (and
 *   the host's own connections to the services address, on loopback, are not a sandbox's).
 * IPv6 never reaches the host from a sandbox: every veth's host side drops it (and has it
 * disabled where /proc/sys is writable).
 * Re-applying replaces the chains' rules and the config-derived sets, and keeps the fronts set.
 */
export function egressRules(pool: Pool, policy: EgressPolicy): string {
  const n = ruleNames(pool);
  const P = pool.cidr;
  const T = `inet ${NFT_TABLE}`;
  const elements = (list: string[]) => list.join(', ');
  const lines = [
    `add table ${T}`,
    `add set ${T} ${n.fronts} { type ipv4_addr . inet_service; }`,
    `add set ${T} ${n.allow} { type ipv4_addr; flags interval; auto-merge; }`,
    `add set ${T} ${n.stores} { type ipv4_addr; flags interval; auto-merge; }`,
    `flush set ${T} ${n.allow}`,
    `flush set ${T} ${n.stores}`,
    ...(policy.allowCidrs.length ? [`add element ${T} ${n.allow} { ${elements(policy.allowCidrs)} }`] : []),
    ...(policy.storeAddresses.length ? [`add element ${T} ${n.stores} { ${elements(policy.storeAddresses)} }`] : []),
    `add chain ${T} ${n.input} { type filter hook input priority 0; policy accept; }`,
    `flush chain ${T} ${n.input}`,
    // The host's own connections to its pool addresses (the services address) come from lo.
    `add rule ${T} ${n.input} iif lo accept`,
    `add rule ${T} ${n.input} iifname "${HOST_LINK_PREFIX}*" meta nfproto ipv6 drop`,
    `add rule ${T} ${n.input} ip saddr ${P} fib saddr . iif oif missing drop`,
    `add rule ${T} ${n.input} ip saddr ${P} ct state established,related accept`,
    `add rule ${T} ${n.input} ip saddr ${P} ip daddr ${pool.servicesAddress} ip saddr . tcp dport @${n.fronts} accept`,
    `add rule ${T} ${n.input} ip saddr ${P} ip daddr ${P} meta l4proto { tcp, udp } th dport 53 accept`,
    `add rule ${T} ${n.input} ip saddr ${P} drop`,
    `add chain ${T} ${n.forward} { type filter hook forward priority 0; policy accept; }`,
    `flush chain ${T} ${n.forward}`,
    `add rule ${T} ${n.forward} iifname "${HOST_LINK_PREFIX}*" meta nfproto ipv6 drop`,
    `add rule ${T} ${n.forward} ip daddr ${P} ct state established,related accept`,
    `add rule ${T} ${n.forward} ip daddr ${P} drop`,
    `add rule ${T} ${n.forward} ip saddr ${P} fib saddr . iif oif missing drop`,
    `add rule ${T} ${n.forward} ip saddr ${P} ct state established,related accept`,
    `add rule ${T} ${n.forward} ip saddr ${P} ip daddr @${n.stores} drop`,
    `add rule ${T} ${n.forward} ip saddr ${P} ip daddr @${n.allow} accept`,
    `add rule ${T} ${n.forward} ip saddr ${P} ip daddr { ${DENIED_RANGES.join(', ')} } drop`,
    `add rule ${T} ${n.forward} ip saddr ${P} meta nfproto ipv4 accept`,
    `add rule ${T} ${n.forward} ip saddr ${P} drop`,
    `add chain ${T} ${n.nat} { type nat hook postrouting priority 100; }`,
    `flush chain ${T} ${n.nat}`,
    `add rule ${T} ${n.nat} ip saddr ${P} ip daddr != ${P} masquerade`,
    '',
  ];
  return lines.join('\n');
}

/**
 * Inside a sandbox namespace: connections from the host (the serving proxy, health probes)
 * to any TCP port of the sandbox's address go to its loopback, so an app that listens on
 * 127.0.0.1 (as on a laptop) is reached as well as one that listens on every address.
 */
export const INSIDE_RULES = [
  `add table ip ${NFT_TABLE}`,
  `add chain ip ${NFT_TABLE} pre { type nat hook prerouting priority -100; }`,
  `flush chain ip ${NFT_TABLE} pre`,
  `add rule ip ${NFT_TABLE} pre iifname "eth0" meta l4proto tcp dnat to 127.0.0.1`,
  '',
].join('\n');

/** Runs nft (in the namespace at `nsPath` when given), with `input` as its stdin script. */
export async function nft(args: string[], input?: string, nsPath?: string): Promise<string> {
  const [command, full] = nsPath ? ['nsenter', [`--net=${nsPath}`, '--', 'nft', ...args]] : ['nft', args];
  if (input === undefined) return (await run(command, full)).stdout;
  return new Promise((resolve, reject) => {
    const child = execFile(command, full, (err, stdout, stderr) =>
      err ? reject(new Error(`nft ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
    );
    child.stdin!.end(input);
  });
}

/** Removes the pool's chains and sets (tests; an installation keeps them). */
export async function removeEgressRules(pool: Pool): Promise<void> {
  const n = ruleNames(pool);
  for (const [kind, name] of [
    ['chain', n.input],
    ['chain', n.forward],
    ['chain', n.nat],
    ['set', n.fronts],
    ['set', n.allow],
    ['set', n.stores],
  ] as const) {
    await nft(['delete', kind, 'inet', NFT_TABLE, name]).catch(() => undefined);
  }
}

/**
 * Removes the per-uid rules of earlier versions (uid range `min`–`max`: an output chain, an
 * input guard of instance ports and their sets), which the namespaces replace; an upgraded
 * installation would otherwise keep guarding ports that serving proxies may now hold.
 */
export async function removeLegacyUidRules(min: number, max: number): Promise<void> {
  for (const [kind, name] of [
    ['chain', `out_${min}_${max}`],
    ['chain', `in_${min}_${max}`],
    ['set', `allow_${min}_${max}`],
    ['set', `instances_${min}_${max}`],
  ] as const) {
    await nft(['delete', kind, 'inet', NFT_TABLE, name]).catch(() => undefined);
  }
}
