import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ImageError, layoutManifestDigest, readImageConfig, type ImageConfig } from './image-config.js';

/** Where an image comes from. */
export interface ImageSource {
  /** `host:port/repository@sha256:…` (or `:tag`, resolved by the pull). */
  reference: string;
  /** The manifest digest the revision runs, when known: a cached one is used without a pull. */
  digest: string | null;
  /** `user:password` for the registry's token endpoint, or null for anonymous. */
  credentials: string | null;
  /** False for a plain-HTTP registry (the built-in one on loopback). */
  tlsVerify: boolean;
}

/** An image unpacked on this machine. */
export interface CachedImage {
  digest: string;
  /** The unpacked root filesystem (read-only for every container of this digest). */
  rootfs: string;
  config: ImageConfig;
  /** False: it was already here (no pull). */
  pulled: boolean;
}

const REF = 'image';
const PULL_TIMEOUT_MS = 10 * 60_000;

function tool(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile(command, args, { encoding: 'utf8', timeout: PULL_TIMEOUT_MS, maxBuffer: 4 * 1024 * 1024 }, (err, _stdout, stderr) => {
      if (!err) return resolve();
      reject(new Error(cleanToolError(stderr || err.message)));
    }),
  );
}

/** skopeo and umoci log `time="…" level=fatal msg="…"`: the message alone, without credentials. */
export function cleanToolError(text: string): string {
  const lines = text.trim().split('\n').filter(Boolean);
  const last = lines.at(-1) ?? 'unknown error';
  const msg = /msg="((?:[^"\\]|\\.)*)"/.exec(last)?.[1]?.replace(/\\"/g, '"') ?? last;
  return msg.replace(/\/\/[^/@\s]+:[^/@\s]+@/g, '//').slice(0, 1_000);
}

/**
 * Images pulled and unpacked once per manifest digest under `dir` (`<digest hex>/rootfs`,
 * `image.json`), shared read-only by every container of that digest: `skopeo copy` into an OCI
 * layout (which verifies every blob's digest, so a corrupt layer fails here), the configuration
 * checked (platform, something to run), `umoci unpack`. A half-done pull never looks done: it
 * happens in a scratch directory renamed into place at the end.
 */
export class ImageCache {
  private readonly pending = new Map<string, Promise<CachedImage>>();

  constructor(readonly dir: string) {}

  ensure(source: ImageSource): Promise<CachedImage> {
    const key = source.digest ?? source.reference;
    let found = this.pending.get(key);
    if (!found) {
      found = this.load(source).finally(() => this.pending.delete(key));
      this.pending.set(key, found);
    }
    return found;
  }

  /** Removes every unpacked image whose digest `keep` does not hold (and scratch left by a crash). */
  async prune(keep: ReadonlySet<string>): Promise<string[]> {
    const removed: string[] = [];
    for (const entry of await readdir(this.dir).catch(() => [] as string[])) {
      const digest = `sha256:${entry}`;
      if (/^[0-9a-f]{64}$/.test(entry) && keep.has(digest)) continue;
      if (entry.startsWith('.pull-') && this.pending.size) continue;
      await rm(path.join(this.dir, entry), { recursive: true, force: true });
      if (!entry.startsWith('.')) removed.push(digest);
    }
    return removed;
  }

  private async cached(digest: string): Promise<CachedImage | null> {
    const home = this.home(digest);
    const config = await readFile(path.join(home, 'image.json'), 'utf8').catch(() => null);
    return config ? { digest, rootfs: path.join(home, 'bundle', 'rootfs'), config: JSON.parse(config) as ImageConfig, pulled: false } : null;
  }

  private async load(source: ImageSource): Promise<CachedImage> {
    if (source.digest) {
      const hit = await this.cached(source.digest);
      if (hit) return hit;
    }
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const scratch = path.join(this.dir, `.pull-${randomBytes(6).toString('hex')}`);
    try {
      const layout = path.join(scratch, 'layout');
      await mkdir(scratch, { mode: 0o700 });
      const from = source.digest ? `${source.reference.replace(/@sha256:[0-9a-f]{64}$/, '')}@${source.digest}` : source.reference;
      // Credentials in a file of this private directory, never on a command line others can read.
      const authFile = path.join(scratch, 'auth.json');
      if (source.credentials) {
        const host = from.slice(0, from.indexOf('/'));
        await writeFile(authFile, JSON.stringify({ auths: { [host]: { auth: Buffer.from(source.credentials).toString('base64') } } }), { mode: 0o600 });
      }
      await tool('skopeo', [
        'copy',
        '--quiet',
        `--src-tls-verify=${source.tlsVerify}`,
        ...(source.credentials ? ['--src-authfile', authFile] : ['--src-no-creds']),
        `docker://${from}`,
        `oci:${layout}:${REF}`,
      ]).catch((err: Error) => {
        throw new ImageError(`Pulling ${source.reference} failed: ${err.message}`);
      });
      const digest = source.digest ?? (await layoutManifestDigest(layout, REF));
      const hit = await this.cached(digest);
      if (hit) return hit;
      const config = await readImageConfig(layout, digest);
      const bundle = path.join(scratch, 'bundle');
      await tool('umoci', ['unpack', '--image', `${layout}:${REF}`, bundle]).catch((err: Error) => {
        throw new ImageError(`Unpacking ${source.reference} failed: ${err.message}`);
      });
      // runc enters the root filesystem as root; the container's uid needs only the image's own modes.
      await chmod(bundle, 0o711);
      await rm(layout, { recursive: true, force: true });
      await rm(authFile, { force: true });
      await writeFile(path.join(scratch, 'image.json'), JSON.stringify(config));
      const home = this.home(digest);
      if (existsSync(home)) return (await this.cached(digest)) ?? Promise.reject(new ImageError(`Image ${digest} is half unpacked.`));
      await rename(scratch, home);
      return { digest, rootfs: path.join(home, 'bundle', 'rootfs'), config, pulled: true };
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }

  private home(digest: string): string {
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new ImageError(`'${digest.slice(0, 80)}' is not a sha256 digest.`);
    return path.join(this.dir, digest.slice(7));
  }
}
