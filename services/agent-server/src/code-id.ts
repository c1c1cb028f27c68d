// What identifies the code an instance runs: a digest of the project's file listing (paths, sizes,
// modification times; dependencies and dot-directories aside). Every instance of a revision serves
// the same artifact and gets the same digest; a new build's files give another.
import { createHash } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';

const MAX_FILES = 20_000;

export async function codeId(root: string): Promise<string> {
  const hash = createHash('sha256');
  let files = 0;
  const walk = async (dir: string): Promise<void> => {
    const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const entry of entries) {
      if (files >= MAX_FILES || entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (entry.isFile()) {
        const { size, mtimeMs } = await stat(full);
        hash.update(`${path.relative(root, full)}\0${size}\0${Math.trunc(mtimeMs)}\n`);
        files++;
      }
    }
  };
  await walk(root);
  return hash.digest('hex').slice(0, 32);
}
