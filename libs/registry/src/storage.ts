import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';

/**
 * Read-only views of distribution's filesystem storage (`<storageDir>/storage/docker/registry/v2`),
 * which garbage collection needs and the registry API does not give: every manifest revision
 * of every repository, tagged or not, with when it was pushed, and the blobs a manifest names.
 */
const HEX = /^[0-9a-f]{64}$/;

export interface StoredManifest {
  repository: string;
  digest: string;
  /** When its revision link was written (the push). */
  pushedAt: Date;
}

const v2 = (storageDir: string) => path.join(storageDir, 'storage', 'docker', 'registry', 'v2');
const entries = (dir: string) => readdir(dir, { withFileTypes: true }).catch(() => []);

/** Every manifest revision under `repositories/` (repository names are up to 4 components deep). */
export async function storedManifests(storageDir: string): Promise<StoredManifest[]> {
  const found: StoredManifest[] = [];
  const walk = async (dir: string, name: string[]): Promise<void> => {
    if (name.length > 4) return;
    for (const entry of await entries(dir)) {
      if (!entry.isDirectory()) continue;
      if (entry.name === '_manifests') {
        const revisions = path.join(dir, '_manifests', 'revisions', 'sha256');
        for (const rev of await entries(revisions)) {
          if (!HEX.test(rev.name)) continue;
          const link = await stat(path.join(revisions, rev.name, 'link')).catch(() => null);
          if (link) found.push({ repository: name.join('/'), digest: `sha256:${rev.name}`, pushedAt: link.mtime });
        }
      } else if (!entry.name.startsWith('_')) {
        await walk(path.join(dir, entry.name), [...name, entry.name]);
      }
    }
  };
  await walk(path.join(v2(storageDir), 'repositories'), []);
  return found;
}

const blobData = (storageDir: string, digest: string) =>
  path.join(v2(storageDir), 'blobs', 'sha256', digest.slice(7, 9), digest.slice(7), 'data');

/** The manifest's own digest and every blob it names (config, layers; an index's manifests and theirs). */
export async function manifestBlobs(
  storageDir: string,
  digest: string,
  seen = new Set<string>(),
): Promise<Set<string>> {
  if (seen.has(digest) || !/^sha256:[0-9a-f]{64}$/.test(digest)) return seen;
  seen.add(digest);
  const text = await readFile(blobData(storageDir, digest), 'utf8').catch(() => null);
  if (!text) return seen;
  let manifest: { config?: { digest?: string }; layers?: { digest?: string }[]; manifests?: { digest?: string }[] };
  try {
    manifest = JSON.parse(text);
  } catch {
    return seen;
  }
  for (const d of [manifest.config?.digest, ...(manifest.layers ?? []).map((l) => l.digest)])
    if (typeof d === 'string') seen.add(d);
  for (const m of manifest.manifests ?? [])
    if (typeof m.digest === 'string') await manifestBlobs(storageDir, m.digest, seen);
  return seen;
}

/** Every blob in the store with its size in bytes. */
export async function storedBlobs(storageDir: string): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  const root = path.join(v2(storageDir), 'blobs', 'sha256');
  for (const prefix of await entries(root)) {
    for (const blob of await entries(path.join(root, prefix.name))) {
      if (!HEX.test(blob.name)) continue;
      const data = await stat(path.join(root, prefix.name, blob.name, 'data')).catch(() => null);
      if (data) sizes.set(`sha256:${blob.name}`, data.size);
    }
  }
  return sizes;
}
