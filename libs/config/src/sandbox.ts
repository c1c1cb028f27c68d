/**
 * Where deployed apps run and the sandbox of builds and apps (docs/configuration.md, Runtime;
 * Sandbox; docs/operations.md, Sandbox).
 */
import { isIP } from 'node:net';
import Joi from 'joi';
import { listOf } from './lists.js';
import { int, num, oneOf, optional, setting, text, type ValuesOf } from './setting.js';

/** Process runtime: where deployments' processes and serving proxies listen. */
export const runtimeSettings = {
  /** Interface deployed apps' serving proxies bind to. */
  host: text(
    'SLIPWAY_RUNTIME_HOST',
    '127.0.0.1',
    "where deployed apps' serving proxies listen (and, unsandboxed, the apps themselves); " +
      'sandboxed apps listen in their own network namespaces and are reached at their namespace addresses',
  ),
  /** Host put in deployments' `url`; differs from `host` when binding all interfaces. */
  publicHost: optional(
    'SLIPWAY_RUNTIME_PUBLIC_HOST',
    Joi.string().hostname(),
    "the host in deployments' `url`",
    'the runtime host (`127.0.0.1` when it binds all interfaces)',
  ),
  advertiseHost: optional(
    'SLIPWAY_RUNTIME_ADVERTISE_HOST',
    Joi.string().hostname(),
    "where the edge reaches this deployer's serving proxies once it owns the runtime " +
      "(`deployer` in the compose file, the pod's IP on Kubernetes)",
    'the runtime host (loopback when it binds all interfaces)',
  ),
  portMin: int(
    'SLIPWAY_RUNTIME_PORT_MIN',
    20_000,
    'lowest port for deployed apps and serving proxies; sandboxed, ' +
      'an app listens inside its own network namespace (never on the host), ' +
      'so only its serving proxy and health probes reach it',
    { min: 1024, max: 65535 },
  ),
  portMax: int('SLIPWAY_RUNTIME_PORT_MAX', 29_999, 'highest port for deployed apps and serving proxies', {
    min: 1024,
    max: 65535,
  }),
  /** An instance's log file is rotated past this size (one rotated file is kept). */
  logFileMb: num(
    'SLIPWAY_RUNTIME_LOG_FILE_MB',
    10,
    "an instance's log file is rotated past this size (one rotated file kept; " +
      "a stopped instance's files are removed, its output stays in the deploy log)",
    { min: 0.01, max: 10_000 },
  ),
  /** Counted while a pulled image's layers are inflated, before anything is unpacked (decompression bombs). */
  imageMaxUnpackedMb: int(
    'SLIPWAY_IMAGE_MAX_UNPACKED_MB',
    4096,
    "the most an image's layers may unpack to on the deployer's disk (MB, " +
      'counted by inflating them before anything is unpacked); a larger image fails its rollout naming this ' +
      'variable, leaving nothing on disk',
    { min: 1 },
  ),
};

type RuntimeValues = ValuesOf<typeof runtimeSettings>;
export type RuntimeSettings = Omit<RuntimeValues, 'publicHost' | 'advertiseHost'> & {
  publicHost: string;
  advertiseHost: string;
};

const LOOPBACK_OF: Record<string, string> = { '0.0.0.0': '127.0.0.1', '::': '::1' };

/** The runtime part as Config's `runtime`: the public host defaults to the bind host, loopback for a wildcard. */
export function runtimeOf(values: RuntimeValues): RuntimeSettings {
  return {
    ...values,
    publicHost: values.publicHost ?? (['0.0.0.0', '::'].includes(values.host) ? '127.0.0.1' : values.host),
    advertiseHost: values.advertiseHost ?? LOOPBACK_OF[values.host] ?? values.host,
  };
}

function isIpv4Cidr(value: string, min: number, max: number): boolean {
  const [ip, prefix = '32', ...rest] = value.trim().split('/');
  return isIP(ip!) === 4 && !rest.length && /^\d{1,2}$/.test(prefix) && Number(prefix) >= min && Number(prefix) <= max;
}

const UID_LIMIT = 4_294_967_294;

/** A resolver the sandboxes' DNS relay asks (UDP and TCP). */
export interface DnsServer {
  host: string;
  port: number;
}

/** `ip`, `ip:port` or `[ipv6]:port` as a resolver (port 53 unless named); null when it is none of them. */
export function dnsServerOf(value: string): DnsServer | null {
  const text = value.trim();
  if (isIP(text)) return { host: text, port: 53 };
  const [, host, port] = /^\[([^\]]+)\]:(\d{1,5})$/.exec(text) ?? /^([^:]+):(\d{1,5})$/.exec(text) ?? [];
  if (!host || !isIP(host) || Number(port) < 1 || Number(port) > 65_535) return null;
  return { host, port: Number(port) };
}

/** A comma-separated list of resolvers; empty (the default): the host's /etc/resolv.conf nameservers. */
export function dnsServers(env: string, doc: string) {
  return setting<DnsServer[]>(
    env,
    Joi.string()
      .allow('')
      .default('')
      .custom((value: string, helpers) =>
        listOf(value).every((s) => dnsServerOf(s)) ? value : helpers.error('servers.invalid'),
      )
      .messages({
        'servers.invalid':
          '{{#label}} must be a comma-separated list of IP addresses, each optionally with a port (`10.0.0.53`, ' +
          '`10.0.0.53:5353`, `[fd00::53]:53`)',
      }),
    doc,
    {
      read: (value: string) => listOf(value).map((s) => dnsServerOf(s)!),
      shown: "the host's /etc/resolv.conf nameservers",
    },
  );
}

export const sandboxSettings = {
  /** `auto`: on wherever it can be set up (production refuses to start without); `off`: opt-out. */
  mode: oneOf(
    'SLIPWAY_SANDBOX',
    ['auto', 'off'],
    'auto',
    '`auto`: builds and apps run sandboxed (production refuses to start without the sandbox); `off`: ' +
      'the explicit, unsafe opt-out, warned about at every start',
  ),
  uidMin: int('SLIPWAY_SANDBOX_UID_MIN', 200_000, 'lowest uid (one per deployment) sandboxed builds and apps run as', {
    min: 1000,
    max: UID_LIMIT,
  }),
  uidMax: int('SLIPWAY_SANDBOX_UID_MAX', 265_535, 'highest such uid (raised to the lowest if below it)', {
    min: 1000,
    max: UID_LIMIT,
  }),
  pidsMax: int('SLIPWAY_SANDBOX_PIDS_MAX', 512, 'processes per app instance', { min: 16 }),
  openFiles: int('SLIPWAY_SANDBOX_OPEN_FILES', 4096, 'open files per app instance', { min: 64 }),
  defaultMemoryMb: int(
    'SLIPWAY_SANDBOX_DEFAULT_MEMORY_MB',
    1024,
    'memory (MB) of an app instance when `resource_spec` sets none',
    { min: 16 },
  ),
  /** The IPv4 pool of the sandboxes' network namespaces (a /30 each). */
  subnet: setting<string>(
    'SLIPWAY_SANDBOX_SUBNET',
    Joi.string()
      .default('10.213.0.0/16')
      .custom((value: string, helpers) => (isIpv4Cidr(value, 8, 29) ? value : helpers.error('subnet.invalid')))
      .messages({ 'subnet.invalid': '{{#label}} must be an IPv4 CIDR with a prefix of 8 to 29 (e.g. 10.213.0.0/16)' }),
    "IPv4 pool of the sandboxes' network namespaces (a /30 per app instance or build; " +
      'its first address is where the data-access fronts listen); use a range none of your networks use',
  ),
  /** Addresses sandboxes may reach although private (checked before the default-deny). */
  allowCidrs: setting<string[]>(
    'SLIPWAY_SANDBOX_ALLOW_CIDRS',
    Joi.string()
      .allow('')
      .default('')
      .custom((value: string, helpers) =>
        listOf(value).every((c) => isIpv4Cidr(c, 0, 32)) ? value : helpers.error('cidrs.invalid'),
      )
      .messages({
        'cidrs.invalid': '{{#label}} must be a comma-separated list of IPv4 CIDRs (sandboxes have no IPv6 route)',
      }),
    'comma-separated IPv4 CIDRs sandboxes may reach although private (a registry on your network); ' +
      "the control plane's Postgres and Redis and this machine stay unreachable",
    { read: listOf, shown: 'none' },
  ),
  /**
   * Bounds of the sandboxes' DNS relay (docs/operations.md, Per-tenant bounds): each query in
   * flight holds one socket of the builder's or deployer's, so one sandbox's flood would
   * otherwise spend every file descriptor of the process that serves everyone's apps.
   */
  dns: {
    /** Empty: the host's /etc/resolv.conf nameservers, read where the relay starts. */
    servers: dnsServers(
      'SLIPWAY_SANDBOX_DNS_SERVERS',
      "comma-separated resolvers (`ip` or `ip:port`) the sandboxes' DNS relay asks, in order, over UDP and TCP; " +
        'sandboxes cannot reach them themselves',
    ),
    maxInflightPerSandbox: int(
      'SLIPWAY_DNS_MAX_INFLIGHT_PER_SANDBOX',
      64,
      'DNS queries of one sandbox in flight at once (UDP and TCP); past it the relay answers REFUSED at once, opening no socket',
      { min: 1, max: 65_535 },
    ),
    maxInflight: int(
      'SLIPWAY_DNS_MAX_INFLIGHT',
      1024,
      "DNS queries in flight at once through one builder's or deployer's relay, all sandboxes together; " +
        'past it the relay answers REFUSED at once',
      { min: 1, max: 65_535 },
    ),
    maxTcpClientsPerSandbox: int(
      'SLIPWAY_DNS_MAX_TCP_CLIENTS_PER_SANDBOX',
      16,
      'open TCP connections of one sandbox to its DNS relay; a further one is closed on arrival',
      { min: 1, max: 1024 },
    ),
  },
  /** Limits of every build step (its cgroup) and the disk quota of a build's directory and npm cache. */
  build: {
    memoryMb: int('SLIPWAY_BUILD_MEMORY_MB', 4096, 'memory (MB) of every build step', { min: 64 }),
    cpu: num('SLIPWAY_BUILD_CPU', 2, 'CPUs of every build step (0: no limit)', { min: 0 }),
    pidsMax: int('SLIPWAY_BUILD_PIDS_MAX', 1024, 'processes of every build step', { min: 16 }),
    diskMb: int(
      'SLIPWAY_BUILD_DISK_MB',
      4096,
      "disk quota of a build's directory and its deployment's npm cache; past it the build fails saying so",
      {
        min: 16,
      },
    ),
  },
};

export type SandboxSettings = ValuesOf<typeof sandboxSettings>;

/** The sandbox part as Config's `sandbox`: a uid range never runs backwards. */
export function sandboxOf(values: SandboxSettings): SandboxSettings {
  return { ...values, uidMax: Math.max(values.uidMin, values.uidMax) };
}
