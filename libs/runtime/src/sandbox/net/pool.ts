/**
 * The sandboxes' address pool (SLIPWAY_SANDBOX_SUBNET): IPv4 /30s, one per sandbox. Slot 0 is
 * the host's own (its `.1`, on the host's loopback, is where the data-access fronts listen); slot
 * n ≥ 1 is a sandbox's: `.1` the host side of its veth (its gateway and DNS relay), `.2` its
 * own address. Interface and namespace names derive from the slot's address, so pools that do
 * not overlap (installations, test stands) never share a name.
 */
export interface SlotAddresses {
  /** The sandbox's own address. */
  address: string;
  /** The host side of its veth: its default route and resolver. */
  gateway: string;
  /** The network namespace, `/run/netns/<name>`. */
  name: string;
  /** The host side of the veth pair. */
  hostLink: string;
  /** The sandbox side before it moves into the namespace (renamed eth0 there). */
  peerLink: string;
}

export interface Pool {
  /** `a.b.c.d/p`, normalised to its network address. */
  cidr: string;
  base: number;
  prefix: number;
  /** Slots 1 … slots-1 belong to sandboxes. */
  slots: number;
  /** The host's address in the pool (fronts listen here). */
  servicesAddress: string;
  /** Names chains and sets of this pool's rules. */
  tag: string;
}

const MAX_PREFIX = 29;

/** Every sandbox veth's host side is named `slw<hex>` (the rules drop IPv6 from all of them). */
export const HOST_LINK_PREFIX = 'slw';

export function ipv4ToInt(text: string): number | null {
  const parts = text.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return null;
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
}

export function intToIpv4(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
}

const hex = (n: number) => n.toString(16).padStart(8, '0');

/** An IPv4 CIDR (`a.b.c.d/p`, or a bare address as /32) as its network number and prefix; null when malformed. */
export function parseIpv4Cidr(text: string): { base: number; prefix: number } | null {
  const [address, bits = '32', ...rest] = text.trim().split('/');
  const ip = ipv4ToInt(address ?? '');
  if (ip === null || rest.length || !/^\d{1,2}$/.test(bits) || Number(bits) > 32) return null;
  const prefix = Number(bits);
  const size = 2 ** (32 - prefix);
  return { base: ip - (ip % size), prefix };
}

/** The pool of `cidr` (prefix 8–29: at least one sandbox slot besides the host's). */
export function parsePool(cidr: string): Pool {
  const parsed = parseIpv4Cidr(cidr);
  if (!parsed || parsed.prefix < 8 || parsed.prefix > MAX_PREFIX)
    throw new Error(`'${cidr}' is not an IPv4 CIDR with a prefix of 8 to ${MAX_PREFIX}.`);
  const { base, prefix } = parsed;
  return {
    cidr: `${intToIpv4(base)}/${prefix}`,
    base,
    prefix,
    slots: 2 ** (32 - prefix) / 4,
    servicesAddress: intToIpv4(base + 1),
    tag: `${hex(base)}_${prefix}`,
  };
}

export function slotAddresses(pool: Pool, slot: number): SlotAddresses {
  if (!Number.isInteger(slot) || slot < 1 || slot >= pool.slots)
    throw new Error(`Slot ${slot} is outside ${pool.cidr}.`);
  const network = pool.base + slot * 4;
  return {
    address: intToIpv4(network + 2),
    gateway: intToIpv4(network + 1),
    name: `slipway-${hex(network)}`,
    hostLink: `${HOST_LINK_PREFIX}${hex(network)}`,
    peerLink: `slp${hex(network)}`,
  };
}

/** The slot of a sandbox address of the pool, or null. */
export function slotOf(pool: Pool, address: string): number | null {
  const ip = ipv4ToInt(address);
  if (ip === null || ip < pool.base || ip >= pool.base + pool.slots * 4 || ip % 4 !== 2) return null;
  const slot = (ip - pool.base - 2) / 4;
  return slot >= 1 ? slot : null;
}

/** The slot of a namespace name of the pool (`slipway-<hex>`), or null. */
export function slotOfName(pool: Pool, name: string): number | null {
  const m = /^slipway-([0-9a-f]{8})$/.exec(name);
  return m ? slotOf(pool, intToIpv4(parseInt(m[1]!, 16) + 2)) : null;
}

/** The lowest free sandbox slot, starting from a random one so concurrent pickers rarely collide. */
export function pickSlot(
  pool: Pool,
  taken: ReadonlySet<number>,
  start = 1 + Math.floor(Math.random() * (pool.slots - 1)),
): number | null {
  const count = pool.slots - 1;
  for (let i = 0; i < count; i++) {
    const slot = 1 + ((start - 1 + i) % count);
    if (!taken.has(slot)) return slot;
  }
  return null;
}
