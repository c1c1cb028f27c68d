import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { INSIDE_RULES, nft } from './egress-rules.js';
import type { Pool, SlotAddresses } from './pool.js';

const run = promisify(execFile);

/** Where `ip netns` keeps named namespaces (bind mounts that outlive their processes). */
export const NETNS_DIR = '/run/netns';

export const nsPathOf = (name: string) => path.join(NETNS_DIR, name);
/** The sandbox's resolv.conf (where `ip netns exec` looks too): its gateway's DNS relay. */
export const resolvConfOf = (name: string) => path.join('/etc/netns', name, 'resolv.conf');

async function ip(args: string[], input?: string): Promise<void> {
  if (input === undefined) {
    await run('ip', args);
    return;
  }
  await new Promise<void>((resolve, reject) => {
    const child = execFile('ip', args, (err, _out, stderr) =>
      err ? reject(new Error(`ip ${args.join(' ')}: ${stderr || err.message}`)) : resolve(),
    );
    child.stdin!.end(input);
  });
}

async function sysctlIn(nsPath: string | null, settings: Record<string, string>): Promise<void> {
  const script = Object.entries(settings)
    .map(([key, value]) => `echo ${value} > /proc/sys/${key.replaceAll('.', '/')}`)
    .join(' && ');
  await run(
    nsPath ? 'nsenter' : '/bin/sh',
    nsPath ? [`--net=${nsPath}`, '--', '/bin/sh', '-c', script] : ['-c', script],
  );
}

/** The namespace and both ends of its veth exist (a re-adopted sandbox). */
export function linkExists(s: SlotAddresses): boolean {
  return existsSync(nsPathOf(s.name)) && existsSync(`/sys/class/net/${s.hostLink}`);
}

/**
 * Creates the namespace `s.name` with a veth pair: the host side holds the gateway (no IPv6),
 * the sandbox side, renamed eth0, holds the sandbox's address and the default route; loopback
 * is up and takes the host's connections to the sandbox's address (INSIDE_RULES).
 */
export async function createLink(s: SlotAddresses): Promise<void> {
  await destroyLink(s);
  const nsPath = nsPathOf(s.name);
  await ip(['netns', 'add', s.name]);
  try {
    await ip(['link', 'add', s.hostLink, 'type', 'veth', 'peer', 'name', s.peerLink, 'netns', s.name]);
    // Belt and braces: the rules drop IPv6 from these links anyway (a read-only /proc/sys refuses this).
    await sysctlIn(null, { [`net.ipv6.conf.${s.hostLink}.disable_ipv6`]: '1' }).catch(() => undefined);
    await ip(['addr', 'add', `${s.gateway}/30`, 'dev', s.hostLink]);
    await ip(['link', 'set', s.hostLink, 'up']);
    await ip(
      ['-n', s.name, '-batch', '-'],
      [
        `link set lo up`,
        `link set ${s.peerLink} name eth0`,
        `addr add ${s.address}/30 dev eth0`,
        `link set eth0 up`,
        `route add default via ${s.gateway}`,
        '',
      ].join('\n'),
    );
    await sysctlIn(nsPath, { 'net.ipv4.conf.eth0.route_localnet': '1' });
    await sysctlIn(nsPath, { 'net.ipv6.conf.eth0.disable_ipv6': '1' }).catch(() => undefined);
    await nft(['-f', '-'], INSIDE_RULES, nsPath);
    await mkdir(path.dirname(resolvConfOf(s.name)), { recursive: true });
    await writeFile(resolvConfOf(s.name), `nameserver ${s.gateway}\n`, { mode: 0o644 });
  } catch (err) {
    await destroyLink(s);
    throw err;
  }
}

/** Removes the veth pair, the namespace and its resolv.conf (missing pieces are fine). */
export async function destroyLink(s: Pick<SlotAddresses, 'name' | 'hostLink'>): Promise<void> {
  await ip(['link', 'del', s.hostLink]).catch(() => undefined);
  await ip(['netns', 'delete', s.name]).catch(() => undefined);
  await rm(path.dirname(resolvConfOf(s.name)), { recursive: true, force: true });
}

/** Namespace names under /run/netns. */
export async function namespaceNames(): Promise<string[]> {
  return readdir(NETNS_DIR).catch(() => []);
}

/**
 * The host's side of the pool: forwarding on, the services address on the host's loopback
 * interface (a local address like any other, reached from the sandboxes through their veths).
 */
export async function prepareHost(pool: Pool): Promise<void> {
  // Set by the operator (compose: `sysctls`) or here, where /proc/sys is writable.
  if ((await readFile('/proc/sys/net/ipv4/ip_forward', 'utf8')).trim() !== '1') {
    await sysctlIn(null, { 'net.ipv4.ip_forward': '1' }).catch((err: Error) => {
      throw new Error(
        `net.ipv4.ip_forward is 0 and cannot be set here (${err.message.trim()}): set it to 1 for the sandboxes' egress.`,
      );
    });
  }
  await ip(['addr', 'replace', `${pool.servicesAddress}/32`, 'dev', 'lo']);
}

/** Removes the services address (tests; an installation keeps it). */
export async function removeHost(pool: Pool): Promise<void> {
  await ip(['addr', 'del', `${pool.servicesAddress}/32`, 'dev', 'lo']).catch(() => undefined);
}
