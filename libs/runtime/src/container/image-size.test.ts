import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { ImageError } from './image-config.js';
import { ImageTooLargeError, unpackedSize } from './image-size.js';

const MB = 1024 * 1024;
const GZIP = 'application/vnd.oci.image.layer.v1.tar+gzip';
const TAR = 'application/vnd.oci.image.layer.v1.tar';
const bound = (mb: number) => ({ maxBytes: mb * MB, variable: 'SLIPWAY_IMAGE_MAX_UNPACKED_MB' });

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** An OCI layout (as skopeo writes it: blobs under blobs/sha256) whose manifest lists `layers`. */
function layout(layers: Array<{ mediaType: string; data: Buffer }>): { dir: string; digest: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-size-'));
  dirs.push(dir);
  mkdirSync(path.join(dir, 'blobs/sha256'), { recursive: true });
  const put = (data: Buffer) => {
    const hex = createHash('sha256').update(data).digest('hex');
    writeFileSync(path.join(dir, 'blobs/sha256', hex), data);
    return { digest: `sha256:${hex}`, size: data.length };
  };
  const manifest = {
    schemaVersion: 2,
    config: put(Buffer.from('{}')),
    layers: layers.map((l) => ({ mediaType: l.mediaType, ...put(l.data) })),
  };
  return { dir, digest: put(Buffer.from(JSON.stringify(manifest))).digest };
}

describe('unpackedSize', () => {
  it('counts every layer uncompressed: gzip inflated, plain tar as is', async () => {
    const { dir, digest } = layout([
      { mediaType: GZIP, data: gzipSync(Buffer.alloc(3 * MB, 7)) },
      { mediaType: TAR, data: Buffer.alloc(MB + 5) },
    ]);
    expect(await unpackedSize(dir, digest, 'r/web@x', bound(8))).toBe(4 * MB + 5);
  });

  it('refuses a decompression bomb once the count passes the bound, without inflating the rest', async () => {
    // 64 MB of zeros gzip to about 64 KB: the kind of layer that filled the deployer's disk.
    const bomb = gzipSync(Buffer.alloc(64 * MB));
    expect(bomb.length).toBeLessThan(MB);
    const { dir, digest } = layout([{ mediaType: GZIP, data: bomb }]);
    const err = await unpackedSize(dir, digest, '127.0.0.1:1/d/web@sha256:abc', bound(8)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageTooLargeError);
    const tooLarge = err as ImageTooLargeError;
    expect(tooLarge.countedBytes).toBeGreaterThan(8 * MB);
    // Stopped at the first chunk past the bound, far short of the layer's 64 MB.
    expect(tooLarge.countedBytes).toBeLessThan(9 * MB);
    expect(tooLarge.message).toMatch(
      /^Image 127\.0\.0\.1:1\/d\/web@sha256:abc unpacks to more than 8 MB .*SLIPWAY_IMAGE_MAX_UNPACKED_MB=8.*nothing of it was unpacked/,
    );
  });

  it('counts the layers together against the bound', async () => {
    const layer = { mediaType: GZIP, data: gzipSync(Buffer.alloc(3 * MB)) };
    const { dir, digest } = layout([
      layer,
      { ...layer, data: gzipSync(Buffer.alloc(3 * MB, 1)) },
      { ...layer, data: gzipSync(Buffer.alloc(3 * MB, 2)) },
    ]);
    await expect(unpackedSize(dir, digest, 'r', bound(8))).rejects.toBeInstanceOf(ImageTooLargeError);
    expect(await unpackedSize(dir, digest, 'r', bound(9))).toBe(9 * MB);
  });

  it('refuses layers it cannot measure: other media types, corrupt gzip', async () => {
    const zstd = layout([{ mediaType: 'application/vnd.oci.image.layer.v1.tar+zstd', data: Buffer.from('x') }]);
    await expect(unpackedSize(zstd.dir, zstd.digest, 'r', bound(8))).rejects.toThrow(
      /media type 'application\/vnd\.oci\.image\.layer\.v1\.tar\+zstd'/,
    );
    const corrupt = layout([{ mediaType: GZIP, data: Buffer.from('not gzip at all') }]);
    const err = await unpackedSize(corrupt.dir, corrupt.digest, 'r', bound(8)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageError);
    expect(err).not.toBeInstanceOf(ImageTooLargeError);
  });
});
