/**
 * Environment names a deployment's secrets may not use (docs/api.md, Deployments, `secrets`).
 *
 * - What the runtime sets for every instance or build step itself: a secret of that name would
 *   either be silently overridden or, worse, win over the platform's value.
 * - Loader and interpreter variables, which change how programs load or behave before any of
 *   the app's code runs: the sandbox's wrapper programs (a shell, bubblewrap, run as root) start
 *   with the instance's environment, so these would run code of the app's choosing there.
 */
export const RUNTIME_ENV_NAMES: readonly string[] = ['PATH', 'HOME', 'TMPDIR', 'PORT', 'DATABASE_URI', 'REDIS_URI', 'REDIS_PREFIX'];

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

/** Every reserved name, for messages and docs (prefixes shown as `LD_*`). */
export const RESERVED_SECRET_NAMES: readonly string[] = [...RUNTIME_ENV_NAMES, ...LOADER_ENV_NAMES];

const runtimeNames = new Set(RUNTIME_ENV_NAMES);
const loaderNames = new Set(LOADER_ENV_NAMES);

/** Whether `name` changes how programs load (case-sensitive, as environment names are). */
export function isLoaderEnvName(name: string): boolean {
  return loaderNames.has(name) || LOADER_ENV_PREFIXES.some((p) => name.startsWith(p));
}

/** Whether a secret may not be called `name`. */
export function isReservedSecretName(name: string): boolean {
  return runtimeNames.has(name) || isLoaderEnvName(name);
}

/** The reserved names among `names`, in order, without duplicates. */
export function reservedSecretNames(names: readonly string[]): string[] {
  return [...new Set(names.filter(isReservedSecretName))];
}
