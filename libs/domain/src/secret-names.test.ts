import { describe, expect, it } from 'vitest';
import {
  isLoaderEnvName,
  isReservedSecretName,
  reservedSecretNameReason,
  reservedSecretNames,
} from './secret-names.js';

describe('reserved secret names', () => {
  it('refuses what the runtime sets and what subverts loaders, by name and by family', () => {
    for (const name of [
      'PATH',
      'HOME',
      'PORT',
      'DATABASE_URI',
      'REDIS_URI',
      'REDIS_PREFIX',
      'NODE_OPTIONS',
      'LD_PRELOAD',
      'LD_LIBRARY_PATH',
      'LD_BIND_NOW',
      'BASH_FUNC_x%%',
    ]) {
      expect(isReservedSecretName(name), name).toBe(true);
    }
  });

  it('allows ordinary names, including near misses and other cases', () => {
    for (const name of [
      'OPENAI_API_KEY',
      'ENV',
      'path',
      'Home',
      'MY_PATH',
      'PORTS',
      'OLD_PRELOAD',
      'NODE_ENV',
      'DATABASE_URL',
    ]) {
      expect(isReservedSecretName(name), name).toBe(false);
    }
  });

  it('refuses what npm sets for the scripts it runs (COLOR, NODE, INIT_CWD, npm_*), not what npm reads', () => {
    for (const name of [
      'COLOR',
      'NODE',
      'INIT_CWD',
      'npm_config_cache',
      'npm_package_name',
      'npm_lifecycle_event',
      'npm_anything',
    ]) {
      expect(reservedSecretNameReason(name), name).toMatch(/^npm sets it for the scripts it runs/);
    }
    for (const name of ['NPM_TOKEN', 'NPM_CONFIG_REGISTRY', 'COLORS', 'NODE_ENV', 'color', 'NPM_X'])
      expect(isReservedSecretName(name), name).toBe(false);
  });

  it('says why each family is reserved', () => {
    expect(reservedSecretNameReason('PORT')).toMatch(/^the runtime sets it/);
    expect(reservedSecretNameReason('NODE_OPTIONS')).toMatch(/subvert the sandbox$/);
    expect(reservedSecretNameReason('OPENAI_API_KEY')).toBeNull();
  });

  it('lists the reserved ones among names once, in order', () => {
    expect(reservedSecretNames(['A', 'PORT', 'LD_PRELOAD', 'PORT', 'B'])).toEqual(['PORT', 'LD_PRELOAD']);
  });

  it('tells loader variables from what the runtime sets', () => {
    expect(['LD_PRELOAD', 'GLIBC_TUNABLES', 'NODE_OPTIONS', 'LD_X'].every(isLoaderEnvName)).toBe(true);
    expect(['PATH', 'DATABASE_URI', 'PORT', 'TOKEN'].some(isLoaderEnvName)).toBe(false);
  });
});
