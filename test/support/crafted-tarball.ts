import { gzipSync } from 'node:zlib';
import { Header } from 'tar';

/** One member of a hand-made archive, exactly as an attacker would write its header. */
export interface CraftedEntry {
  path: string;
  type?: 'File' | 'Directory' | 'SymbolicLink' | 'Link' | 'CharacterDevice' | 'BlockDevice' | 'FIFO';
  linkpath?: string;
  body?: string;
  mode?: number;
}

/**
 * A .tar.gz whose headers say exactly what `entries` say, in that order: names with `..` or a
 * leading `/`, links anywhere, devices. No tar tool would write most of these.
 */
export function craftTarball(entries: readonly CraftedEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const body = Buffer.from(entry.body ?? '');
    const type = entry.type ?? 'File';
    const header = new Header({
      path: entry.path,
      type,
      linkpath: entry.linkpath,
      size: type === 'File' ? body.length : 0,
      mode: entry.mode ?? (type === 'Directory' ? 0o755 : 0o644),
      mtime: new Date(0),
      uid: 0,
      gid: 0,
    });
    const block = Buffer.alloc(512);
    header.encode(block, 0);
    blocks.push(block);
    if (type === 'File' && body.length) blocks.push(body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}
