import { chmodSync, lstatSync, mkdirSync } from 'node:fs';
import path from 'node:path';

/** What the control plane keeps in its data dir that nobody else may read. */
const PRIVATE_DIRS = ['builds', 'artifacts', 'uploads', 'runtime', 'cache', 'registry', 'images'];
const PRIVATE_FILES = ['secrets.key', 'bootstrap-api-key', 'registry-signing.key'];

/**
 * Makes the data dir the control plane's alone: created 0700 when missing; the data dir, its
 * working directories (builds, artifacts, uploads, runtime, cache, registry, images) and its key files
 * (`secrets.key`, `bootstrap-api-key`, `registry-signing.key`) that this process's user owns lose every group and
 * other permission (0700 directories, 0600 files), so an older installation's 0755 tree is
 * closed too. Entries owned by someone else (a volume another service created) and symlinks are
 * left alone. Returns what it tightened.
 */
export function secureDataDir(dataDir: string): string[] {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const uid = process.getuid?.();
  const tightened: string[] = [];
  const tighten = (target: string, directory: boolean) => {
    let info;
    try {
      info = lstatSync(target);
    } catch {
      return;
    }
    if (info.isSymbolicLink() || info.isDirectory() !== directory || (uid !== undefined && info.uid !== uid)) return;
    if ((info.mode & 0o077) === 0) return;
    chmodSync(target, directory ? 0o700 : 0o600);
    tightened.push(target);
  };
  tighten(dataDir, true);
  for (const dir of PRIVATE_DIRS) tighten(path.join(dataDir, dir), true);
  for (const file of PRIVATE_FILES) tighten(path.join(dataDir, file), false);
  return tightened;
}
