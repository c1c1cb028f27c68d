import { chown, cp, mkdir, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  ARTIFACT_APP_DIR,
  ARTIFACT_MANIFEST_FILE,
  parseGraphConfig,
  type ArtifactManifest,
  isReservedSecretName,
  type GraphConfig,
  type SecretEntry,
} from '@slipway/domain';
import { redactValues } from '@slipway/logging';
import type { RevisionLogWriter } from '@slipway/pipeline';
import { parseEnvFile, sandboxEnvironment } from '@slipway/runtime';
import { findLockfile, lockfileInstallCommand, runScriptCommand, type PackageManager } from './package-manager.js';

/** A build failure the user can act on; its message becomes the revision's `status_message`. */
export class BuildError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BuildError';
  }
}

/** Where one build attempt works and where its artifact goes, all under the data dir. */
export interface BuildPaths {
  /** Scratch space of this attempt, removed when it ends. */
  work: string;
  /** The clone or the extracted tarball goes here. */
  source: string;
  /** HOME of the build commands: nothing of the worker's own home is visible to them. */
  home: string;
  /** Shared npm cache, so repeated builds do not download everything again. */
  npmCache: string;
  artifactsRoot: string;
  /** `<dataDir>/artifacts/<revision id>`: the revision's artifact_ref. */
  artifact: string;
}

/**
 * Per attempt, so a worker the reconciler took for dead (and that still runs) never shares a
 * directory with the attempt that replaced it. The npm cache is the deployment's own: a
 * deployment's build can neither read nor poison what another one installs.
 */
export function buildPaths(dataDir: string, revisionId: string, attempt: number, deploymentId: string): BuildPaths {
  const work = path.join(dataDir, 'builds', `${revisionId}-a${attempt}`);
  return {
    work,
    source: path.join(work, 'source'),
    home: path.join(work, 'home'),
    npmCache: path.join(dataDir, 'cache', 'npm', deploymentId),
    artifactsRoot: path.join(dataDir, 'artifacts'),
    artifact: path.join(dataDir, 'artifacts', revisionId),
  };
}

/**
 * The build log of a revision as the builder writes it: every line goes (redacted) to the
 * revision's log, and the last few are kept for the status message of a failure.
 */
export class BuildLog {
  private readonly recent: string[] = [];

  constructor(
    private readonly writer: RevisionLogWriter,
    private readonly secretValues: readonly string[],
    private readonly keep = 10,
  ) {}

  line(message: string, level = 'info'): void {
    this.writer.line(message, level);
    this.recent.push(this.redact(message.length > 500 ? `${message.slice(0, 500)}…` : message));
    if (this.recent.length > this.keep) this.recent.shift();
  }

  /** Resolves once the writer has caught up (RevisionLogWriter.backlog). */
  backlog(): Promise<void> {
    return this.writer.backlog();
  }

  /** The last lines written, redacted, oldest first. */
  tail(): string[] {
    return [...this.recent];
  }

  redact(text: string): string {
    return redactValues(text, this.secretValues);
  }

  close(): Promise<void> {
    return this.writer.close();
  }
}

/**
 * The environment of install and build commands, from scratch: `base` (the graph config's env,
 * for the graph check), then the revision's secrets (never a reserved name, docs/api.md
 * Deployments), then what the builder sets, which wins: a fixed PATH (with the running node's
 * directory, so `node` and `npm` are the worker's), HOME and the npm cache as the step sees
 * them, CI=true. Loader variables never pass from any of them (sandboxEnvironment): the
 * sandbox's wrapper programs run as root with this environment. Nothing of the worker's own
 * environment (database URL, secrets key) reaches user code.
 */
export function buildEnv(
  where: { home: string; npmCache: string },
  secrets: readonly SecretEntry[],
  base: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const own: Record<string, string> = { ...base };
  for (const s of secrets) if (!isReservedSecretName(s.name)) own[s.name] = s.value;
  return sandboxEnvironment(own, {
    home: where.home,
    path: [
      path.dirname(process.execPath),
      '/usr/local/sbin',
      '/usr/local/bin',
      '/usr/sbin',
      '/usr/bin',
      '/sbin',
      '/bin',
    ],
    extra: { LANG: 'C.UTF-8', npm_config_cache: where.npmCache, npm_config_update_notifier: 'false', CI: 'true' },
  });
}

/** `rel` inside `root`, or a BuildError; symlinks are followed, so a link out of the tree is refused too. */
async function resolveInside(root: string, rel: string, what: string): Promise<string | null> {
  const normalized = path.posix.normalize(rel.replace(/\\/g, '/'));
  if (path.posix.isAbsolute(normalized) || normalized === '..' || normalized.startsWith('../')) {
    throw new BuildError(`${what} '${rel}' must be a relative path inside the source.`);
  }
  const full = path.join(root, normalized);
  let real: string;
  try {
    real = await realpath(full);
  } catch {
    return null;
  }
  const realRoot = await realpath(root);
  const back = path.relative(realRoot, real);
  if (back === '..' || back.startsWith(`..${path.sep}`) || path.isAbsolute(back)) {
    throw new BuildError(`${what} '${rel}' leads outside the source.`);
  }
  return full;
}

export interface LoadedGraphConfig {
  /** The validated graph config; a plain app without one has no graphs. */
  config: GraphConfig;
  /** The graph config file's directory (a plain app's: the source root): where install, build and start run. */
  appDir: string;
  /** Relative to the source root (posix); null for a plain app without a graph config file. */
  relativePath: string | null;
}

/**
 * Reads and validates the graph config file; `where` says where it was looked for (ref, commit
 * or "the uploaded source"). With `optional` (the default path, nobody asked for a file), a
 * missing file makes a plain app at the source root: no graphs, served by its own `start`
 * script if it has one (agent-project.ts decides). A path the caller named must exist.
 */
export async function loadGraphConfig(
  sourceRoot: string,
  configPath: string,
  where: string,
  { optional = false } = {},
): Promise<LoadedGraphConfig> {
  const file = await resolveInside(sourceRoot, configPath, 'graph_config_path');
  const isFile = file
    ? await stat(file).then(
        (s) => s.isFile(),
        () => false,
      )
    : false;
  if (!file || !isFile) {
    if (optional) return { config: { graphs: {} }, appDir: sourceRoot, relativePath: null };
    throw new BuildError(`Graph config file '${configPath}' not found at ${where}.`);
  }
  const config = parseGraphConfig(await readFile(file, 'utf8'), configPath);
  return {
    config,
    appDir: path.dirname(file),
    relativePath: path.relative(sourceRoot, file).split(path.sep).join('/'),
  };
}

export interface PackageInfo {
  scripts: Record<string, string>;
  /** package.json's `packageManager` field (`pnpm@9.1.0`), if any. */
  packageManager: string | null;
  /** The lockfile found beside package.json, if any. */
  lockfile: { file: string; manager: PackageManager } | null;
}

/** The app's package.json, or null when there is none (whether that is fatal depends on the project kind). */
export async function readPackageJson(appDir: string, appLabel: string): Promise<PackageInfo | null> {
  // Contained: a package.json a step replaced with a link to a file outside is refused, never read.
  const file = await resolveInside(appDir, 'package.json', `package.json in ${appLabel}`);
  let text: string;
  try {
    text = await readFile(file ?? path.join(appDir, 'package.json'), 'utf8');
  } catch {
    return null;
  }
  let pkg: { scripts?: unknown; packageManager?: unknown };
  try {
    pkg = JSON.parse(text);
  } catch (err) {
    throw new BuildError(`package.json in ${appLabel} is not valid JSON (${(err as Error).message}).`);
  }
  const scripts = (pkg && typeof pkg.scripts === 'object' && pkg.scripts !== null ? pkg.scripts : {}) as Record<
    string,
    unknown
  >;
  return {
    scripts: Object.fromEntries(Object.entries(scripts).filter(([, v]) => typeof v === 'string')) as Record<
      string,
      string
    >,
    packageManager: typeof pkg?.packageManager === 'string' ? pkg.packageManager : null,
    lockfile: await findLockfile(appDir),
  };
}

/** The configured install command, else the one the project's lockfile / `packageManager` calls for. */
export function installCommandFor(pkg: PackageInfo, configured: string | null | undefined): string {
  if (configured?.trim()) return configured;
  return lockfileInstallCommand(pkg);
}

/** The configured build command, else `<package manager> run build` when there is a build script, else none. */
export function buildCommandFor(pkg: PackageInfo, configured: string | null | undefined): string | null {
  if (configured?.trim()) return configured;
  return pkg.scripts.build ? runScriptCommand(pkg, 'build') : null;
}

/**
 * Moves the built tree into `<artifacts>/<revision id>/app` with its manifest, atomically: it
 * is assembled in a staging directory beside the final one (same filesystem) and renamed into
 * place, so a reader never sees half an artifact. A leftover of an earlier attempt of the same
 * revision (built, then the worker died before the database said so) is replaced.
 *
 * The artifacts root stays the control plane's (0700); the artifact itself (0700) belongs to
 * `uid`, the deployment's, when the build ran sandboxed.
 */
export async function publishArtifact(
  paths: BuildPaths,
  sourceRoot: string,
  manifest: ArtifactManifest,
  attempt: number,
  uid: number | null,
): Promise<void> {
  await mkdir(paths.artifactsRoot, { recursive: true, mode: 0o700 });
  const staging = path.join(paths.artifactsRoot, `.${manifest.revision_id}-a${attempt}.partial`);
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { mode: 0o700 });
  const app = path.join(staging, ARTIFACT_APP_DIR);
  try {
    await rename(sourceRoot, app);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    await cp(sourceRoot, app, { recursive: true, verbatimSymlinks: true });
  }
  await rm(path.join(app, '.git'), { recursive: true, force: true });
  await writeFile(path.join(staging, ARTIFACT_MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`, {
    flag: 'wx',
    mode: 0o644,
  });
  if (uid !== null) await chown(staging, uid, uid);
  await rm(paths.artifact, { recursive: true, force: true });
  await rename(staging, paths.artifact);
}

/**
 * The directories of the graph config's `dependencies` other than the app itself (`.`), each a
 * local package (a directory with a package.json, inside the source) whose dependencies are
 * installed too. npm packages belong in package.json, not here.
 */
export async function dependencyDirs(
  sourceRoot: string,
  appDir: string,
  dependencies: readonly string[] | undefined,
): Promise<string[]> {
  const dirs: string[] = [];
  for (const dep of dependencies ?? []) {
    if (!dep.startsWith('.') && !dep.startsWith('/')) {
      throw new BuildError(
        `Dependency '${dep}' in the graph config is not a path: ` +
          "list local packages ('.', './packages/tools') there, npm packages in package.json.",
      );
    }
    const rel = path.relative(sourceRoot, path.resolve(appDir, dep));
    const dir = await resolveInside(sourceRoot, rel || '.', `Dependency '${dep}'`);
    if (
      !dir ||
      !(await stat(path.join(dir, 'package.json')).then(
        (s) => s.isFile(),
        () => false,
      ))
    ) {
      throw new BuildError(`Dependency '${dep}' in the graph config is not a directory with a package.json.`);
    }
    if (path.resolve(dir) !== path.resolve(appDir) && !dirs.includes(dir)) dirs.push(dir);
  }
  return dirs;
}

/**
 * The graph config's `env` as values, for code the build runs (the graph check): an object as
 * given, or the env file(s) it names read from the app directory. A file that is not there is
 * skipped here (the runtime says so in the deploy log); values are never logged.
 */
export async function graphConfigEnv(appDir: string, env: GraphConfig['env']): Promise<Record<string, string>> {
  if (!env) return {};
  if (typeof env === 'object' && !Array.isArray(env)) return { ...env };
  const values: Record<string, string> = {};
  for (const file of typeof env === 'string' ? [env] : env) {
    const full = await resolveInside(appDir, file, 'Env file').catch(() => null);
    if (full) Object.assign(values, parseEnvFile(await readFile(full, 'utf8').catch(() => '')));
  }
  return values;
}
