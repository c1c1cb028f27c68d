import { execFile } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { checkEntrypoint } from './entrypoint-check.js';
import { ImageError, layoutManifestDigest, readImageConfig, type ImageConfig } from './image-config.js';
import { ImageTooLargeError, unpackedSize, type UnpackBound } from './image-size.js';

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
  /** What its layers unpack to (counted at its pull; null for a copy that was already here). */
  unpackedBytes: number | null;
}

/** What a pull learnt of an image's unpacked size: all of it, or (refused) the bytes counted past the bound. */
export interface UnpackMeasure {
  source: ImageSource;
  digest: string;
  unpackedBytes: number;
  refused: boolean;
}

export interface ImageCacheOptions {
  /** The most bytes an image's layers may unpack to (image-size.ts); none: no bound. */
  bound?: UnpackBound;
  /**
   * Told every measure, before the pull goes on or fails (the registry quota counts unpacked
   * bytes from it). Its failure is its own: never fails the pull.
   */
  onMeasured?: (measure: UnpackMeasure) => Promise<void>;
}

const REF = 'image';
/** In an unpacked image's directory: the repositories it was read from with authorization (see ImageCache). */
const GRANTS = 'grants.json';
/** Under the cache directory: the key of the credentials' fingerprints in GRANTS files. */
const GRANT_KEY = '.grant-key';

/** A repository (`host:port/path`) the registry let read a digest, and with which credentials. */
interface Grant {
  repository: string;
  /** 'anonymous', or an HMAC of the credentials under GRANT_KEY (never the credentials). */
  by: string;
}
const PULL_TIMEOUT_MS = 10 * 60_000;

function tool(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile(
      command,
      args,
      { encoding: 'utf8', timeout: PULL_TIMEOUT_MS, maxBuffer: 4 * 1024 * 1024 },
      (err, _stdout, stderr) => {
        if (!err) return resolve();
        reject(new Error(cleanToolError(stderr || err.message)));
      },
    ),
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
 * checked (platform, something to run), its layers' unpacked size counted against the bound
 * (image-size.ts: streamed through gunzip with an early stop, so a decompression bomb is refused
 * before `umoci unpack` writes a byte), `umoci unpack`, its command checked (entrypoint-check.ts).
 * A half-done pull never looks done: it happens in a scratch directory renamed into place at
 * the end, and a refused one leaves nothing.
 *
 * A digest is no capability: each unpacked image records (`grants.json`) the repositories it
 * was read from and with which credentials (anonymous, or a keyed fingerprint). A source whose
 * repository is recorded, anonymously or with its own credentials, reuses the copy with no
 * registry call (a rollback, a restart); any other source first has the registry confirm, with
 * the source's own reference and credentials, that it may read the digest (`skopeo inspect
 * --raw`: a manifest read, no pull), and a refusal fails it.
 */
export class ImageCache {
  private readonly pending = new Map<string, Promise<CachedImage>>();

  constructor(
    readonly dir: string,
    private readonly options: ImageCacheOptions = {},
  ) {}

  ensure(source: ImageSource): Promise<CachedImage> {
    // Never one source's pull answering another's: their repositories or credentials may differ.
    const key = `${pinned(source, source.digest)}\0${source.credentials ?? ''}`;
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
      if ((entry.startsWith('.pull-') && this.pending.size) || entry === GRANT_KEY) continue;
      await rm(path.join(this.dir, entry), { recursive: true, force: true });
      if (!entry.startsWith('.')) removed.push(digest);
    }
    return removed;
  }

  private async cached(digest: string): Promise<CachedImage | null> {
    const home = this.home(digest);
    const config = await readFile(path.join(home, 'image.json'), 'utf8').catch(() => null);
    return config
      ? {
          digest,
          rootfs: path.join(home, 'bundle', 'rootfs'),
          config: JSON.parse(config) as ImageConfig,
          pulled: false,
          unpackedBytes: null,
        }
      : null;
  }

  /** A cached image, for `source` only if its repository and credentials are recorded or the registry confirms them. */
  private async reusable(source: ImageSource, hit: CachedImage): Promise<CachedImage> {
    const grant = await this.grantOf(source);
    const grants = await this.grants(hit.digest);
    if (grants.some((g) => g.repository === grant.repository && (g.by === 'anonymous' || g.by === grant.by)))
      return hit;
    await withAuthFile(this.dir, source, (auth) =>
      tool('skopeo', [
        'inspect',
        '--raw',
        `--tls-verify=${source.tlsVerify}`,
        ...auth,
        `docker://${pinned(source, hit.digest)}`,
      ]),
    ).catch((err: Error) => {
      throw new ImageError(
        `Image ${hit.digest} is unpacked on this machine, but the registry does not let this revision read it ` +
          `from ${grant.repository}: ${err.message}`,
      );
    });
    // Only spares the next call: a copy pruned meanwhile is still this revision's to run once.
    await this.record(this.home(hit.digest), grant).catch(() => undefined);
    return hit;
  }

  /** The repositories (and credentials) `digest` was read from with authorization. */
  private async grants(digest: string): Promise<Grant[]> {
    const text = await readFile(path.join(this.home(digest), GRANTS), 'utf8').catch(() => '[]');
    try {
      const list = JSON.parse(text) as unknown;
      return Array.isArray(list)
        ? list.filter((g): g is Grant => typeof g?.repository === 'string' && typeof g?.by === 'string')
        : [];
    } catch {
      return [];
    }
  }

  /** Adds `grant` to the GRANTS file in `home` (replaced whole, never half written). */
  private async record(home: string, grant: Grant): Promise<void> {
    const before = await readFile(path.join(home, GRANTS), 'utf8')
      .then((t) => JSON.parse(t) as Grant[])
      .catch(() => [] as Grant[]);
    if (before.some((g) => g.repository === grant.repository && g.by === grant.by)) return;
    const next = path.join(home, `${GRANTS}.${randomBytes(4).toString('hex')}`);
    await writeFile(next, JSON.stringify([...before, grant]), { mode: 0o600 });
    await rename(next, path.join(home, GRANTS));
  }

  /** The repository `source` names, and its credentials' fingerprint (keyed, so the file reveals nothing). */
  private async grantOf(source: ImageSource): Promise<Grant> {
    const repository = repositoryOf(source.reference);
    if (!source.credentials) return { repository, by: 'anonymous' };
    return {
      repository,
      by: createHmac('sha256', await this.grantKey())
        .update(source.credentials)
        .digest('hex'),
    };
  }

  private async grantKey(): Promise<Buffer> {
    const file = path.join(this.dir, GRANT_KEY);
    const found = await readFile(file).catch(() => null);
    if (found?.length === 32) return found;
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const next = `${file}.${randomBytes(4).toString('hex')}`;
    await writeFile(next, randomBytes(32), { mode: 0o600 });
    await rename(next, file);
    return readFile(file);
  }

  private async load(source: ImageSource): Promise<CachedImage> {
    if (source.digest) {
      const hit = await this.cached(source.digest);
      if (hit) return this.reusable(source, hit);
    }
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const scratch = path.join(this.dir, `.pull-${randomBytes(6).toString('hex')}`);
    try {
      const layout = path.join(scratch, 'layout');
      await mkdir(scratch, { mode: 0o700 });
      const from = pinned(source, source.digest);
      await withAuthFile(scratch, source, (auth) =>
        tool('skopeo', [
          'copy',
          '--quiet',
          `--src-tls-verify=${source.tlsVerify}`,
          ...auth.map((a) => a.replace(/^--/, '--src-')),
          `docker://${from}`,
          `oci:${layout}:${REF}`,
        ]),
      ).catch((err: Error) => {
        throw new ImageError(`Pulling ${source.reference} failed: ${err.message}`);
      });
      const digest = source.digest ?? (await layoutManifestDigest(layout, REF));
      const grant = await this.grantOf(source);
      const hit = await this.cached(digest);
      if (hit) {
        await this.record(this.home(digest), grant);
        return hit;
      }
      const config = await readImageConfig(layout, digest);
      const unpackedBytes = await this.measure(source, layout, digest);
      const bundle = path.join(scratch, 'bundle');
      await tool('umoci', ['unpack', '--image', `${layout}:${REF}`, bundle]).catch((err: Error) => {
        throw new ImageError(`Unpacking ${source.reference} failed: ${err.message}`);
      });
      await checkEntrypoint(path.join(bundle, 'rootfs'), config);
      // runc enters the root filesystem as root; the container's uid needs only the image's own modes.
      await chmod(bundle, 0o711);
      await rm(layout, { recursive: true, force: true });
      await this.record(scratch, grant);
      await writeFile(path.join(scratch, 'image.json'), JSON.stringify(config));
      const home = this.home(digest);
      if (existsSync(home)) {
        const other = await this.cached(digest);
        if (!other) throw new ImageError(`Image ${digest} is half unpacked.`);
        await this.record(home, grant);
        return other;
      }
      await rename(scratch, home);
      return { digest, rootfs: path.join(home, 'bundle', 'rootfs'), config, pulled: true, unpackedBytes };
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }

  /** The bytes the image's layers unpack to, reported to onMeasured; past the bound, ImageTooLargeError. */
  private async measure(source: ImageSource, layout: string, digest: string): Promise<number> {
    const bound = this.options.bound ?? { maxBytes: Number.MAX_SAFE_INTEGER, variable: 'none' };
    const report = (unpackedBytes: number, refused: boolean) =>
      this.options.onMeasured?.({ source, digest, unpackedBytes, refused }).catch(() => undefined);
    try {
      const bytes = await unpackedSize(layout, digest, source.reference, bound);
      await report(bytes, false);
      return bytes;
    } catch (err) {
      if (err instanceof ImageTooLargeError) await report(err.countedBytes, true);
      throw err;
    }
  }

  private home(digest: string): string {
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new ImageError(`'${digest.slice(0, 80)}' is not a sha256 digest.`);
    return path.join(this.dir, digest.slice(7));
  }
}

/** `host:port/repository` of a reference, without its tag or digest. */
export function repositoryOf(reference: string): string {
  const bare = reference.replace(/@sha256:[0-9a-f]{64}$/, '');
  const slash = bare.indexOf('/');
  const colon = bare.lastIndexOf(':');
  return colon > slash ? bare.slice(0, colon) : bare;
}

/** The source's reference at `digest` (as it is when null). */
function pinned(source: ImageSource, digest: string | null): string {
  return digest ? `${source.reference.replace(/@sha256:[0-9a-f]{64}$/, '')}@${digest}` : source.reference;
}

/**
 * Runs `use` with skopeo's credential options for `source`: `--authfile` naming a 0600 file in a
 * fresh private directory under `dir`, removed after (never credentials on a command line others
 * can read), or `--no-creds`.
 */
async function withAuthFile<T>(dir: string, source: ImageSource, use: (options: string[]) => Promise<T>): Promise<T> {
  if (!source.credentials) return use(['--no-creds']);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const home = await mkdtemp(path.join(dir, '.pull-auth-'));
  try {
    const file = path.join(home, 'auth.json');
    const host = source.reference.slice(0, source.reference.indexOf('/'));
    await writeFile(
      file,
      JSON.stringify({ auths: { [host]: { auth: Buffer.from(source.credentials).toString('base64') } } }),
      { mode: 0o600 },
    );
    return await use(['--authfile', file]);
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}
