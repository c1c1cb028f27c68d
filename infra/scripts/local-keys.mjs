// `npm start` runs with NODE_ENV=production, where the services take their keys from the
// environment only (SLIPWAY_SECRETS_KEY is required, a generated bootstrap key is shown once and
// not kept). On a local install the data dir keeps them instead, as outside production: the
// secrets key in `<data dir>/secrets.key` (the file the services themselves use outside
// production), and on the first start in a data dir an admin bootstrap key in
// `<data dir>/bootstrap-api-key` (0600), registered by the api as SLIPWAY_BOOTSTRAP_API_KEY.
// Delete that file once the key is stored elsewhere: later starts then pass no bootstrap key.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, log } from './bootstrap.mjs';

/** Reads `file`, or writes `make()` into it (mode 0600, never over a file another start wrote). */
function keptValue(file, make) {
  if (existsSync(file)) return { value: readFileSync(file, 'utf8').trim(), created: false };
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const value = make();
  try {
    writeFileSync(file, `${value}\n`, { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if (err.code === 'EEXIST') return keptValue(file, make);
    throw err;
  }
  return { value, created: true };
}

/** The key variables to add to `env` (none the caller set already). */
export function localKeys(env) {
  const dataDir = path.resolve(ROOT, env.SLIPWAY_DATA_DIR || '.slipway');
  const keys = {};
  let fresh = false;
  if (!env.SLIPWAY_SECRETS_KEY) {
    const secrets = keptValue(path.join(dataDir, 'secrets.key'), () => randomBytes(32).toString('base64'));
    keys.SLIPWAY_SECRETS_KEY = secrets.value;
    fresh = secrets.created;
    if (fresh)
      log(`generated SLIPWAY_SECRETS_KEY into ${path.join(dataDir, 'secrets.key')}; set it explicitly in production`);
  }
  const bootstrapFile = path.join(dataDir, 'bootstrap-api-key');
  if (!env.SLIPWAY_BOOTSTRAP_API_KEY && (fresh || existsSync(bootstrapFile))) {
    const bootstrap = keptValue(bootstrapFile, () => `slw_${randomBytes(32).toString('base64url')}`);
    keys.SLIPWAY_BOOTSTRAP_API_KEY = bootstrap.value;
    // Shown once, on stdout (never the log stream), as the api shows a key it generates.
    if (bootstrap.created) {
      process.stdout.write(
        `\n======== Slipway bootstrap admin API key ========\n  ${bootstrap.value}\n  ` +
          `(saved to ${bootstrapFile}; delete that file once you have stored the key)\n\n`,
      );
    }
  }
  return keys;
}
