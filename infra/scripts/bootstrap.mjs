// Steps shared by `npm start` and `npm test` on a machine that may have nothing but Node 20:
// pnpm, dependencies, and local Postgres/Redis. Plain Node, no dependencies: it runs before
// `pnpm install` has.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PNPM_VERSION = '10.34.8';

export function log(message) {
  process.stderr.write(`[slipway] ${message}\n`);
}

export function run(command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: ROOT, stdio: 'inherit', ...options });
  if (result.error) throw result.error;
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} exited with ${result.status ?? result.signal}`);
  }
}

function has(command, args = ['--version']) {
  const result = spawnSync(command, args, { stdio: 'ignore' });
  return !result.error && result.status === 0;
}

/** pnpm from npm (corepack needs registry signatures this network does not serve). */
export function ensurePnpm() {
  const version = spawnSync('pnpm', ['--version'], { encoding: 'utf8' });
  if (!version.error && version.stdout.trim() === PNPM_VERSION) return;
  log(`installing pnpm ${PNPM_VERSION}`);
  run('npm', ['install', '-g', '--no-fund', '--no-audit', `pnpm@${PNPM_VERSION}`]);
}

/** `pnpm install` when the lockfile is newer than the last install (a no-op run costs ~1 s). */
export function ensureDependencies() {
  const marker = path.join(ROOT, 'node_modules/.modules.yaml');
  const lock = path.join(ROOT, 'pnpm-lock.yaml');
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  log('installing dependencies');
  run('pnpm', ['install', '--frozen-lockfile', '--prefer-offline']);
}

function answers(host, port) {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 1_500 });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
    socket.once('error', () => resolve(false));
  });
}

const LOCAL = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/**
 * Starts (installing if needed) Postgres and Redis when the configured URLs point at this
 * machine and nothing answers there. Remote URLs are the operator's business.
 */
export async function ensureServices(env = process.env) {
  const pg = new URL(env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/slipway');
  const redis = new URL(env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const pgPort = Number(pg.port || 5432);
  const redisPort = Number(redis.port || 6379);
  const needed = [
    LOCAL.has(pg.hostname) && !(await answers('127.0.0.1', pgPort)),
    LOCAL.has(redis.hostname) && !(await answers('127.0.0.1', redisPort)),
  ];
  if (!needed.some(Boolean)) return;
  if (!has('bash')) throw new Error('bash is needed to start local Postgres/Redis');
  run('bash', ['infra/scripts/ensure-services.sh'], {
    env: { ...env, PG_PORT: String(pgPort), REDIS_PORT: String(redisPort) },
  });
}

/** The Debian packages behind each sandbox tool (docs/operations.md, Sandbox): [command, the arguments that prove it runs, package]. */
const SANDBOX_TOOLS = [
  ['bwrap', ['--version'], 'bubblewrap'],
  ['nft', ['--version'], 'nftables'],
  ['ip', ['-V'], 'iproute2'],
];

/**
 * The built-in image registry (docs/operations.md, The image registry): CNCF distribution;
 * skopeo and umoci copy and unpack images, runc runs them (docs/operations.md, The container
 * runtime) with catatonit as the init of images that bring none, busybox-static is what the
 * tests build images from. [command, the arguments that prove it runs, package]
 */
const REGISTRY_TOOLS = [
  ['docker-registry', ['--version'], 'docker-registry'],
  ['skopeo', ['--version'], 'skopeo'],
  ['umoci', ['--version'], 'umoci'],
  ['runc', ['--version'], 'runc'],
  ['catatonit', ['--version'], 'catatonit'],
  ['busybox', ['true'], 'busybox-static'],
];

let aptUpdated = false;

/**
 * Installs the Debian packages of the tools that do not run, as root on a Debian-like machine
 * (apt-get present), saying so; otherwise says what is missing and what that costs (`missingMeans`).
 */
function ensureDebianTools(tools, what, missingMeans) {
  const missing = tools.filter(([tool, args]) => !has(tool, args)).map(([, , pkg]) => pkg);
  if (!missing.length) return;
  if (process.getuid?.() !== 0 || !has('apt-get', ['--version'])) {
    log(`${what} missing (${missing.join(', ')}); not root or no apt-get, so not installing them: ${missingMeans}`);
    return;
  }
  log(`installing the ${what}: apt-get install ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (!aptUpdated) run('apt-get', ['update', '-qq'], { env });
  aptUpdated = true;
  run('apt-get', ['install', '-y', '-qq', ...missing], { env });
}

/**
 * The sandbox builds and apps run in needs bubblewrap, nftables and iproute2; missing ones are
 * installed as root, otherwise the services report at start what is missing (outside production
 * they then run unsandboxed, with a warning).
 */
export function ensureSandboxTools() {
  ensureDebianTools(SANDBOX_TOOLS, 'sandbox tools', 'builds and apps will run unsandboxed outside production');
}

/**
 * Deployments answer at `<name>.localhost` on the edge by default. Browsers and curl resolve
 * `*.localhost` themselves, but Node (the SDK, the CLIs) asks the system, and Debian's resolver
 * does not know those names unless nss-myhostname is in /etc/nsswitch.conf: installed as root
 * (its package adds it there), otherwise the log says exactly what to do.
 */
export function ensureLocalNames(appsDomain = process.env.SLIPWAY_APPS_DOMAIN ?? 'localhost') {
  if (appsDomain !== 'localhost' || process.platform !== 'linux' || resolvesLocalNames()) return;
  if (process.getuid?.() === 0 && has('apt-get', ['--version'])) {
    log('`*.localhost` does not resolve on this machine: apt-get install libnss-myhostname');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    if (!aptUpdated) run('apt-get', ['update', '-qq'], { env });
    aptUpdated = true;
    run('apt-get', ['install', '-y', '-qq', 'libnss-myhostname'], { env });
    if (resolvesLocalNames()) return;
  }
  log(
    '`<name>.localhost` (where deployments answer) does not resolve for programs on this machine: ' +
      "install libnss-myhostname and make the hosts line of /etc/nsswitch.conf read 'hosts: files myhostname dns', " +
      'or set SLIPWAY_APPS_DOMAIN to a domain whose wildcard record points here',
  );
}

function resolvesLocalNames() {
  return spawnSync('getent', ['hosts', 'slipway-probe.localhost'], { stdio: 'ignore' }).status === 0;
}

/** The registry `npm start` runs and the tools `npm test` pushes test images with (installed as root when missing). */
export function ensureRegistryTools() {
  ensureDebianTools(
    REGISTRY_TOOLS,
    'registry tools',
    'the built-in image registry cannot start (set SLIPWAY_REGISTRY=off when you run one yourself) and images cannot run',
  );
}
