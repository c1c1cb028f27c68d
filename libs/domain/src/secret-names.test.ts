import { describe, expect, it } from 'vitest';
import { isLoaderEnvName, isReservedSecretName, reservedSecretNames } from './secret-names.js';

describe('reserved secret names', () => {
  it('refuses what the runtime sets and what subverts loaders, by name and by family', () => {
    for (const name of ['PATH', 'HOME', 'PORT', 'DATABASE_URI', 'REDIS_URI', 'REDIS_PREFIX', 'NODE_OPTIONS', 'LD_PRELOAD', 'LD_LIBRARY_PATH', 'LD_BIND_NOW', 'BASH_FUNC_x%%']) {
      expect(isReservedSecretName(name), name).toBe(true);
    }
  });

  it('allows ordinary names, including near misses and other cases', () => {
    for (const name of ['OPENAI_API_KEY', 'ENV', 'path', 'Home', 'MY_PATH', 'PORTS', 'OLD_PRELOAD', 'NODE_ENV', 'DATABASE_URL']) {
      expect(isReservedSecretName(name), name).toBe(false);
    }
  });

  it('lists the reserved ones among names once, in order', () => {
    expect(reservedSecretNames(['A', 'PORT', 'LD_PRELOAD', 'PORT', 'B'])).toEqual(['PORT', 'LD_PRELOAD']);
  });

  it('tells loader variables from what the runtime sets', () => {
    expect(['LD_PRELOAD', 'GLIBC_TUNABLES', 'NODE_OPTIONS', 'LD_X'].every(isLoaderEnvName)).toBe(true);
    expect(['PATH', 'DATABASE_URI', 'PORT', 'TOKEN'].some(isLoaderEnvName)).toBe(false);
  });
});
