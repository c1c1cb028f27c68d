/**
 * Environment names a deployment's secrets may not use (docs/api.md, Deployments, `secrets`).
 *
 * - What the runtime sets for every instance or build step itself: a secret of that name would
 *   either be silently overridden or, worse, win over the platform's value.
 * - Loader and interpreter variables, which change how programs load or behave before any of
 *   the app's code runs: the sandbox's wrapper programs (a shell, bubblewrap, run as root) start
 *   with the instance's environment, so these would run code of the app's choosing there.
 * - What npm sets for the scripts it runs, which would silently replace the secret's value.
 */
export const RUNTIME_ENV_NAMES: readonly string[] = [
  'PATH',
  'HOME',
  'TMPDIR',
  'PORT',
  'DATABASE_URI',
  'REDIS_URI',
  'REDIS_PREFIX',
];

/** Loader and interpreter variables (see above); every `LD_*` and `BASH_FUNC_*` too. */
export const LOADER_ENV_NAMES: readonly string[] = [
  'NODE_OPTIONS',
  'LD_PRELOAD',
  'LD_LIBRARY_PATH',
  'LD_AUDIT',
  'GLIBC_TUNABLES',
  'GCONV_PATH',
  'LOCPATH',
  'NLSPATH',
  'HOSTALIASES',
  'RES_OPTIONS',
  'LOCALDOMAIN',
  'MALLOC_TRACE',
  'BASH_ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'IFS',
];

/** Whole families of loader variables (`LD_DEBUG_OUTPUT`, `LD_BIND_NOW`, exported shell functions). */
export const LOADER_ENV_PREFIXES: readonly string[] = ['LD_', 'BASH_FUNC_'];

/**
 * What npm sets for every script it runs (`npm run start` starts an app, build steps run npm):
 * a secret of that name reaches the app as npm's value, not its own (`COLOR` arrives as `0`).
 * `npm_*` is npm's namespace (`npm_package_*`, `npm_lifecycle_*`, `npm_config_*`); the upper-case
 * `NPM_CONFIG_*` and `NPM_TOKEN` are configuration npm reads, and stay allowed.
 */
export const NPM_ENV_NAMES: readonly string[] = ['COLOR', 'NODE', 'INIT_CWD'];

/** npm's own family (case-sensitive). */
export const NPM_ENV_PREFIXES: readonly string[] = ['npm_'];

/** Every reserved name, for messages and docs (prefixes shown as `LD_*`). */
export const RESERVED_SECRET_NAMES: readonly string[] = [...RUNTIME_ENV_NAMES, ...LOADER_ENV_NAMES, ...NPM_ENV_NAMES];

/** Every reserved family, by prefix. */
export const RESERVED_SECRET_PREFIXES: readonly string[] = [...LOADER_ENV_PREFIXES, ...NPM_ENV_PREFIXES];

const runtimeNames = new Set(RUNTIME_ENV_NAMES);
const loaderNames = new Set(LOADER_ENV_NAMES);
const npmNames = new Set(NPM_ENV_NAMES);

/** Whether `name` changes how programs load (case-sensitive, as environment names are). */
export function isLoaderEnvName(name: string): boolean {
  return loaderNames.has(name) || LOADER_ENV_PREFIXES.some((p) => name.startsWith(p));
}

/** Why a secret may not be called `name`, said for the caller; null when it may. */
export function reservedSecretNameReason(name: string): string | null {
  if (runtimeNames.has(name)) return 'the runtime sets it for every instance and build step';
  if (isLoaderEnvName(name))
    return "it would change how programs load before the app's code runs, and subvert the sandbox";
  if (npmNames.has(name) || NPM_ENV_PREFIXES.some((p) => name.startsWith(p))) {
    return "npm sets it for the scripts it runs (`npm run start`, build steps), so the app would see npm's value, not this one";
  }
  return null;
}

/** Whether a secret may not be called `name`. */
export function isReservedSecretName(name: string): boolean {
  return reservedSecretNameReason(name) !== null;
}

/** The reserved names among `names`, in order, without duplicates. */
export function reservedSecretNames(names: readonly string[]): string[] {
  return [...new Set(names.filter(isReservedSecretName))];
}
