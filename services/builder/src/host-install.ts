import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { AGENT_SERVER_HOST_INSTALL, AGENT_SERVER_HOST_SOURCE, copyAgentServerHost } from './agent-server-host.js';
import { BuildError } from './build-steps.js';
import { copyTree, installKey, isRealDirectory, linkTree, sealTree } from './dependency-cache.js';
import { CommandAbortedError, runShellCommand } from './run-command.js';

/** Bumped when what an entry holds or how it is keyed changes: older entries are then removed. */
const FORMAT = 'slipway-host-2';
/** The host's files that decide its install: nothing else of the host is read by npm. */
const DECIDING_FILES = ['package.json', 'package-lock.json', '.npmrc'];
/** A staging directory older than this belongs to a builder that died mid-install. */
const ABANDONED_MS = 6 * 60 * 60_000;

export interface HostInstallOptions {
  /** `SLIPWAY_AGENT_SERVER_HOST_CACHE`. */
  root: string;
  /** The host's package files (services/agent-server, or the packaged builder's copy). */
  source?: string;
  /** The install gives up after this (the build deadline). */
  deadlineMs: number;
}

/** How a build got the host's dependencies. */
export interface HostInstallResult {
  key: string;
  /** True when this call ran the install; false when it copied an install made before (or by a concurrent build). */
  installed: boolean;
}

/**
 * The agent server host's installed dependencies (node_modules), installed once per builder
 * data dir (or per `SLIPWAY_AGENT_SERVER_HOST_CACHE`) and put into every LangGraph.js artifact,
 * instead of an `npm install` of the same locked tree in every deployment's first build.
 *
 * - The tree is the control plane's, not a tenant's: fixed by the host's own lockfile (exact
 *   versions with integrity hashes), installed by the builder itself with `--ignore-scripts`
 *   (no package code runs), in an environment of its own (no user secret, no build's HOME or
 *   npm cache: nothing a build step wrote can steer it). So sharing it crosses no tenant boundary.
 * - An entry is keyed by the digest of the host's package.json, lockfile and .npmrc, the install
 *   command and the Node version and platform; a new host version installs afresh and the old
 *   entries go once the new one is in place.
 * - A sandboxed build links the entry's files into its tree (`linked`): they stay the builder's
 *   with no write bit for anyone else (the install clears them), so the deployment's uid reads
 *   them and can change none, and its artifact costs neither the copy's time nor its ~180 MB.
 *   Otherwise (steps run as the builder's own user, who could change the files) a real copy.
 *   The cache directory is never mounted into a sandbox.
 * - One install at a time per process; builds that need it meanwhile wait for it, each within
 *   its own deadline, and a build cancelled while it waits does not stop the install for the
 *   others. Several processes sharing the directory may each install once: staged in a
 *   directory of its own, renamed into place, the first rename wins.
 */
export class AgentServerHostInstall {
  private readonly source: string;
  private readonly running = new Map<string, Promise<void>>();

  constructor(private readonly options: HostInstallOptions) {
    this.source = options.source ?? AGENT_SERVER_HOST_SOURCE;
  }

  /** The entry's key for the host as it is now. */
  key(): Promise<string> {
    return installKey(FORMAT, AGENT_SERVER_HOST_INSTALL, this.source, DECIDING_FILES);
  }

  /**
   * Puts the host's installed dependencies at `<hostDir>/node_modules` (whatever was there
   * goes, a link included, never followed), installing them first if no entry exists: hard
   * links to the entry's files when `linked`, else a copy. `onLine` gets the install's output
   * when this call runs it; `signal` stops this call's wait, never an install other builds wait
   * for too.
   */
  async copyInto(
    hostDir: string,
    how: { signal: AbortSignal; onLine: (line: string) => void; linked?: boolean },
  ): Promise<HostInstallResult> {
    const key = await this.key();
    const entry = path.join(this.options.root, key);
    let installed = false;
    if (!(await isRealDirectory(entry))) {
      let install = this.running.get(key);
      if (!install) {
        installed = true;
        install = this.install(key, how.onLine).finally(() => this.running.delete(key));
        this.running.set(key, install);
      } else {
        how.onLine('Another build is installing the agent server’s dependencies: waiting for it.');
      }
      await untilDone(install, how.signal);
    }
    const target = path.join(hostDir, 'node_modules');
    await rm(target, { recursive: true, force: true });
    await (how.linked ? linkTree : copyTree)(path.join(entry, 'node_modules'), target);
    return { key, installed };
  }

  /** Installs into a staging directory and renames it into place; then drops other keys' entries. */
  private async install(key: string, onLine: (line: string) => void): Promise<void> {
    const { root, deadlineMs } = this.options;
    await mkdir(root, { recursive: true, mode: 0o700 });
    const staging = path.join(root, `.${key}.${randomBytes(4).toString('hex')}.partial`);
    try {
      await mkdir(path.join(staging, 'home'), { recursive: true, mode: 0o700 });
      for (const file of DECIDING_FILES)
        await copyFile(path.join(this.source, file), path.join(staging, file)).catch(ignoreMissing);
      onLine(`$ ${AGENT_SERVER_HOST_INSTALL}`);
      const result = await runShellCommand({
        command: AGENT_SERVER_HOST_INSTALL,
        cwd: staging,
        env: installEnv(staging, root),
        signal: AbortSignal.timeout(deadlineMs),
        onLine: (line) => {
          if (line.length) onLine(line);
        },
      }).catch((err: unknown) => {
        if (err instanceof CommandAbortedError)
          throw new BuildError(
            `Installing the agent server's dependencies took longer than ${Math.round(deadlineMs / 1000)} s.`,
          );
        throw err;
      });
      if (result.exitCode !== 0) {
        const how = result.exitCode !== null ? `exited with code ${result.exitCode}` : `was killed by ${result.signal}`;
        throw new BuildError(
          `Installing the agent server's dependencies failed: \`${AGENT_SERVER_HOST_INSTALL}\` ${how}.`,
        );
      }
      // An install that made no node_modules is no entry: every copy would fail.
      if (!(await isRealDirectory(path.join(staging, 'node_modules'))))
        throw new BuildError("Installing the agent server's dependencies made no node_modules.");
      // Builds link these files: nobody but the builder may write them, whatever a package shipped.
      await sealTree(path.join(staging, 'node_modules'));
      await rm(path.join(staging, 'home'), { recursive: true, force: true });
      await rename(staging, path.join(root, key)).catch(async (err: NodeJS.ErrnoException) => {
        // Another process's install got there first: the same tree, from the same files.
        if (!(await isRealDirectory(path.join(root, key)))) throw err;
      });
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
    await this.dropOthers(key);
  }

  /** Removes the entries of other keys (an older host) and staging directories abandoned by a dead builder. */
  private async dropOthers(key: string): Promise<void> {
    const { root } = this.options;
    const now = Date.now();
    for (const name of await readdir(root).catch(() => [] as string[])) {
      if (name === key || name === 'npm-cache') continue;
      const full = path.join(root, name);
      if (name.endsWith('.partial')) {
        const age = now - ((await stat(full).catch(() => null))?.mtimeMs ?? now);
        if (age < ABANDONED_MS) continue;
      }
      await rm(full, { recursive: true, force: true });
    }
  }
}

/** What of the builder's own environment configures npm: registry, proxy and CA settings. */
const NPM_SETTINGS = /^(npm_config_.+|NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|https?_proxy|no_proxy)$/i;

/**
 * The install's whole environment: the running Node's npm on PATH, a HOME and npm cache of its
 * own, and the builder's npm settings (its npm_config_* and proxy and CA variables, and its
 * user npmrc): an operator's registry mirror, proxy or CA applies to this install as to any npm
 * run on the machine. Nothing else of the builder's environment (database URL, secrets key),
 * and nothing of any build's (its secrets, HOME, npm cache), which never reach this module.
 */
export function installEnv(
  staging: string,
  root: string,
  builder: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(builder))
    if (value !== undefined && NPM_SETTINGS.test(name)) env[name] = value;
  const userconfig = builder.HOME ? path.join(builder.HOME, '.npmrc') : null;
  if (userconfig && existsSync(userconfig) && !env.npm_config_userconfig && !env.NPM_CONFIG_USERCONFIG)
    env.npm_config_userconfig = userconfig;
  return {
    ...env,
    PATH: [path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(':'),
    HOME: path.join(staging, 'home'),
    LANG: 'C.UTF-8',
    CI: 'true',
    npm_config_cache: path.join(root, 'npm-cache'),
    npm_config_update_notifier: 'false',
  };
}

/** Waits for `work`, or rejects as a stopped command once `signal` aborts (leaving `work` to go on). */
function untilDone(work: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(new CommandAbortedError(signal.reason));
  return new Promise<void>((resolve, reject) => {
    const stop = () => reject(new CommandAbortedError(signal.reason));
    signal.addEventListener('abort', stop, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop));
  });
}

function ignoreMissing(err: NodeJS.ErrnoException): void {
  if (err.code !== 'ENOENT') throw err;
}

/**
 * The host as a build lays it out, for what runs it without a builder (the tests' fixtures, the
 * bench): compiled into `<into>/.slipway-agent-server` with its dependencies from the install
 * kept under `root` (made there once, shared by every caller of the same root), copied, or hard
 * linked when `linked` (only for a host whose user never writes them). Returns the host's directory.
 */
export async function copyHostWithInstall(into: string, root: string, linked = false): Promise<string> {
  const hostDir = await copyAgentServerHost(into);
  const install = new AgentServerHostInstall({ root, deadlineMs: 300_000 });
  await install.copyInto(hostDir, { signal: AbortSignal.timeout(300_000), onLine: () => undefined, linked });
  return hostDir;
}
