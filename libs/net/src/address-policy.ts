import { BlockList, isIP } from 'node:net';

/**
 * Which outbound destinations are allowed beyond the public internet over https.
 *
 * `allowHosts` entries are host names (matched exactly, case-insensitively), IP addresses or
 * CIDR ranges (`10.0.0.0/8`, `fd00::/8`). A URL whose host is allow-listed may use plain
 * `http` and may resolve to any address; an address inside an allow-listed IP or range may be
 * reached whatever name led to it. Everything else must be `https` to a public address.
 */
export interface OutboundPolicy {
  allowHosts: readonly string[];
}

/** Ranges no user-supplied URL may reach, each with the word a refusal names it by. */
const REFUSED: Array<[string, number, 'ipv4' | 'ipv6', string]> = [
  ['0.0.0.0', 8, 'ipv4', 'unspecified ("this network")'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'carrier-grade NAT (shared)'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.0.0.0', 24, 'ipv4', 'IETF protocol assignment'],
  ['192.0.2.0', 24, 'ipv4', 'documentation'],
  ['192.88.99.0', 24, 'ipv4', '6to4 relay'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'benchmarking'],
  ['198.51.100.0', 24, 'ipv4', 'documentation'],
  ['203.0.113.0', 24, 'ipv4', 'documentation'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved or broadcast'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  // v4-mapped (::ffff:a.b.c.d) and v4-compatible addresses reach IPv4 hosts by another name.
  ['::ffff:0:0', 96, 'ipv6', 'IPv4-mapped'],
  ['::', 96, 'ipv6', 'IPv4-compatible'],
  ['64:ff9b::', 96, 'ipv6', 'NAT64'],
  ['64:ff9b:1::', 48, 'ipv6', 'NAT64'],
  ['100::', 64, 'ipv6', 'discard-only'],
  ['2001::', 23, 'ipv6', 'IETF protocol assignment'],
  ['2001:db8::', 32, 'ipv6', 'documentation'],
  ['2002::', 16, 'ipv6', '6to4'],
  ['fc00::', 7, 'ipv6', 'unique-local'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['fec0::', 10, 'ipv6', 'site-local'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];

const refusedLists = REFUSED.map(([network, prefix, family, name]) => {
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return { list, family, name };
});

const familyOf = (address: string) => (isIP(address) === 6 ? 'ipv6' : 'ipv4');

/** An IPv6 literal as URL.hostname spells it (`[::1]`) → `::1`. */
export const bareHost = (hostname: string) => hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();

/** A BlockList of the policy's IP and CIDR entries (host names are matched by `hostAllowed`). */
function allowedRanges(policy: OutboundPolicy): BlockList {
  const list = new BlockList();
  for (const entry of policy.allowHosts) {
    const [ip, prefix] = entry.trim().split('/');
    const version = isIP(bareHost(ip ?? ''));
    if (!version) continue;
    const family = version === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(bareHost(ip!), family);
    else list.addSubnet(bareHost(ip!), Number(prefix), family);
  }
  return list;
}

/** True when `hostname` (a URL's host, without port) is allow-listed by name, address or range. */
export function hostAllowed(hostname: string, policy: OutboundPolicy): boolean {
  const host = bareHost(hostname).replace(/\.$/, '');
  if (isIP(host)) return allowedRanges(policy).check(host, familyOf(host));
  return policy.allowHosts.some((entry) => entry.trim().toLowerCase().replace(/\.$/, '') === host);
}

/**
 * Why `address` (an IP literal) may not be reached, or null when it may: public addresses,
 * and any address inside an allow-listed IP or range.
 */
export function addressRefusal(address: string, policy: OutboundPolicy): string | null {
  const ip = bareHost(address);
  if (!isIP(ip)) return 'not an IP address';
  const family = familyOf(ip);
  if (allowedRanges(policy).check(ip, family)) return null;
  // Same family only: BlockList also matches an IPv4 address against IPv6 rules through its
  // mapped form, which would put every IPv4 address in ::ffff:0:0/96.
  const hit = refusedLists.find((r) => r.family === family && r.list.check(ip, family));
  return hit ? `a ${hit.name} address` : null;
}
