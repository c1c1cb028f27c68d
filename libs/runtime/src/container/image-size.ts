import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { ImageError } from './image-config.js';

/** The bound on an image's unpacked bytes, and the variable that sets it (named in every refusal). */
export interface UnpackBound {
  maxBytes: number;
  /** e.g. `SLIPWAY_IMAGE_MAX_UNPACKED_MB`: a refusal tells the operator what to raise. */
  variable: string;
}

/** An image whose layers unpack past the bound: refused before anything is unpacked. */
export class ImageTooLargeError extends ImageError {
  override name = 'ImageTooLargeError';

  constructor(
    readonly reference: string,
    /** Bytes counted when the count stopped: more than the bound, short of the image's real size. */
    readonly countedBytes: number,
    readonly bound: UnpackBound,
  ) {
    const mb = (n: number) => Math.floor(n / (1024 * 1024));
    super(
      `Image ${reference} unpacks to more than ${mb(bound.maxBytes)} MB ` +
        `(its layers were counted past ${mb(countedBytes)} MB before the count stopped), ` +
        `over this runtime's bound on an image's unpacked size (${bound.variable}=${mb(bound.maxBytes)}); nothing of it was unpacked. ` +
        'Make the image smaller, or have the operator raise the bound.',
    );
  }
}

const GZIP = new Set([
  'application/vnd.oci.image.layer.v1.tar+gzip',
  'application/vnd.oci.image.layer.nondistributable.v1.tar+gzip',
  'application/vnd.docker.image.rootfs.diff.tar.gzip',
  'application/vnd.docker.image.rootfs.foreign.diff.tar.gzip',
]);
const TAR = new Set([
  'application/vnd.oci.image.layer.v1.tar',
  'application/vnd.oci.image.layer.nondistributable.v1.tar',
]);

const OVER = new Error('over the bound');

/**
 * The end of a layer's pipeline: drops the bytes (only their count matters, so memory stays
 * flat) and fails the pipeline once `add` says the bound is passed, which stops the gunzip and
 * the read: the rest of the layer is never inflated.
 */
const counter = (add: (n: number) => boolean) =>
  new Writable({ write: (chunk: Buffer, _enc, done) => done(add(chunk.length) ? null : OVER) });

/**
 * The bytes the layers of the image `manifestDigest` of an OCI layout (as `skopeo copy` writes
 * it: compressed blobs under `blobs/sha256`) hold once uncompressed, each layer streamed through
 * gunzip and counted, stopping at the first byte past `bound` (ImageTooLargeError): a
 * decompression bomb costs the time to inflate `bound` bytes, never the disk. The sum of the
 * layers' tar streams is at least the root filesystem's bytes (later layers only replace or
 * delete earlier files; headers and padding count too), so an image that passes cannot unpack
 * to more. Layers of other media types are refused, as umoci could not unpack them either.
 */
export async function unpackedSize(
  layout: string,
  manifestDigest: string,
  reference: string,
  bound: UnpackBound,
): Promise<number> {
  const manifest = JSON.parse(await readFile(blobFile(layout, manifestDigest), 'utf8')) as {
    layers?: Array<{ mediaType?: string; digest?: string }>;
  };
  let total = 0;
  const add = (n: number) => (total += n) <= bound.maxBytes;
  for (const layer of manifest.layers ?? []) {
    const type = layer.mediaType ?? '';
    if (!GZIP.has(type) && !TAR.has(type)) {
      throw new ImageError(
        `Image ${reference} has a layer of media type '${type.slice(0, 100)}'; ` +
          `this runtime unpacks gzip-compressed or uncompressed tar layers only.`,
      );
    }
    const file = blobFile(layout, String(layer.digest));
    try {
      if (GZIP.has(type)) await pipeline(createReadStream(file), createGunzip(), counter(add));
      else await pipeline(createReadStream(file), counter(add));
    } catch (err) {
      if (err === OVER) throw new ImageTooLargeError(reference, total, bound);
      throw new ImageError(
        `Image ${reference} has a layer (${String(layer.digest).slice(0, 80)}) that cannot be read: ${(err as Error).message}`,
      );
    }
  }
  return total;
}

function blobFile(layout: string, digest: string): string {
  if (!/^sha256:[0-9a-f]{64}$/.test(digest))
    throw new ImageError(`The image names a blob with a malformed digest '${digest.slice(0, 80)}'.`);
  return path.join(layout, 'blobs', 'sha256', digest.slice(7));
}
