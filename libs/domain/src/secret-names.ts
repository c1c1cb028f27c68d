/**
 * Environment names a deployment's secrets may not use (docs/api.md, Secrets).
 *
 * - What the runtime sets for every instance or build step itself: a secret of that name would
 *   either be silently overridden or, worse, win over the platform's value.
 * - What changes how programs load or behave before any of the app's code runs (the dynamic
 *   loader's variables, the shell's start-up files, Node's own options): the sandbox's wrapper
 *   programs start with the instance's environment, so these would run code of the app's
 *   choosing outside the app's control.
 */
export const RESERVED_SECRET_NAMES: readonly string[] = [
  // Set by the runtime.
  'PATH',
  'HOME',
  'TMPDIR',
  'PORT',
  'DATABASE_URI',
  'REDIS_URI',
  'REDIS_PREFIX',
  // Loaders and interpreters.
  'NODE_OPTIONS',
  'LD_PRELOAD',
  'LD_LIBRARY_PATH',
  'LD_AUDIT',
  'GCONV_PATH',
  'LOCPATH',
  'NLSPATH',
  'HOSTALIASES',
  'RES_OPTIONS',
  'LOCALDOMAIN',
  'MALLOC_TRACE',
  'BASH_ENV',
  'ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'IFS',
  'PS4',
];

/** Whole families of loader variables (`LD_DEBUG_OUTPUT`, `LD_BIND_NOW`, …). */
export const RESERVED_SECRET_PREFIXES: readonly string[] = ['LD_', 'BASH_FUNC_'];

const reserved = new Set(RESERVED_SECRET_NAMES);

/** Whether a secret may not be called `name` (case-sensitive, as environment names are). */
export function isReservedSecretName(name: string): boolean {
  return reserved.has(name) || RESERVED_SECRET_PREFIXES.some((p) => name.startsWith(p));
}

/** The reserved names among `names`, in order, without duplicates. */
export function reservedSecretNames(names: readonly string[]): string[] {
  return [...new Set(names.filter(isReservedSecretName))];
}
