import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { finished, PassThrough, Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Config } from '@slipway/config';
import { deriveKey } from '@slipway/crypto';
import {
  DeploymentRepository,
  QuotaRepository,
  UploadRepository,
  type DataSource,
  type EntityManager,
} from '@slipway/db';
import {
  BadRequestError,
  ConflictError,
  NotFoundError,
  PayloadTooLargeError,
  UnauthorizedError,
} from '@slipway/domain';
import {
  inspectArchiveStream,
  parseUploadObjectPath,
  uploadFilePath,
  uploadObjectPath,
  type UploadObject,
} from '@slipway/source';
import type { UploadUrlView } from '../schemas/upload.schema.js';
import type { QuotaService } from './quota.service.js';

const INVALID_TOKEN = 'Invalid or expired upload URL.';
const GZIP_MAGIC = Buffer.from([0x1f, 0x8b]);

/*
 * Upload token, base64url of 73 bytes:
 *   version (1) | deployment uuid (16) | upload uuid (16) | expiry, ms since epoch (8, BE) | HMAC-SHA256 of all before (32)
 * It binds the object path (deployment + upload id) and the expiry; nothing else is trusted.
 */
const TOKEN_VERSION = 1;
const SIGNED_LENGTH = 1 + 16 + 16 + 8;
const TOKEN_LENGTH = SIGNED_LENGTH + 32;

const uuidBytes = (id: string) => Buffer.from(id.replace(/-/g, ''), 'hex');
const uuidOf = (bytes: Buffer) => {
  const h = bytes.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

export type UploadConfig = Pick<Config, 'dataDir' | 'publicUrl' | 'uploadMaxBytes' | 'uploadUrlTtlMs' | 'secretsKey'>;

/**
 * Source tarball uploads of `upload` deployments (docs/api.md, Uploads and the deploy CLIs): signed, expiring upload URLs,
 * and the PUT that streams a tarball to disk under the data dir. The uploads row is the
 * record: `completed_at` is set only once the whole file is on disk under its final name.
 */
export class UploadService {
  private readonly key: Buffer;

  constructor(
    private readonly dataSource: DataSource,
    private readonly config: UploadConfig,
    private readonly quotas: QuotaService,
    private readonly now: () => number = Date.now,
  ) {
    this.key = deriveKey(config.secretsKey.key, 'upload-url');
  }

  /** A fresh object path and the URL to PUT its tarball to; only for upload deployments. */
  async createUploadUrl(workspaceId: string, deploymentId: string): Promise<UploadUrlView> {
    const deployment = await new DeploymentRepository(this.dataSource.manager).find(workspaceId, deploymentId);
    if (!deployment) throw NotFoundError.of('Deployment', deploymentId);
    if (deployment.source !== 'upload') {
      throw new BadRequestError(
        `Deployment ID ${deploymentId} has source ${deployment.source}; upload URLs are only for upload (internal_source) deployments.`,
      );
    }
    if (deployment.status === 'AWAITING_DELETE')
      throw new BadRequestError(`Deployment ID ${deploymentId} is being deleted.`);
    const objectPath = uploadObjectPath(deployment.id);
    await this.dataSource.transaction(async (m) => {
      await this.quotas.assertUploadSlot(m, workspaceId);
      await new UploadRepository(m).insert(objectPath, deployment.id);
    });
    const token = this.sign(parseUploadObjectPath(objectPath)!, this.now() + this.config.uploadUrlTtlMs);
    return { upload_url: `${this.config.publicUrl}/v2/uploads/${token}`, object_path: objectPath };
  }

  /**
   * Stores the body of a PUT to an upload URL. The token is checked before a byte is read; the
   * size limit is checked against Content-Length up front and again while streaming (chunked
   * bodies have none); the body must start with the gzip magic bytes, and its entries must pass
   * the archive rules (ArchivePolicy: no escaping names or links, no devices). The file is written as
   * `.part` and renamed only when complete, so the builder never sees half a tarball.
   */
  async receive(token: string, contentLength: string | undefined, body: Readable): Promise<void> {
    const object = this.verify(token);
    const objectPath = uploadObjectPath(object.deploymentId, object.uploadId);
    await this.assertOpen(this.dataSource.manager, objectPath, object.deploymentId);

    const max = this.config.uploadMaxBytes;
    if (contentLength !== undefined && Number(contentLength) > max) throw this.tooLarge();
    const workspaceId = await new QuotaRepository(this.dataSource.manager).workspaceOfDeployment(object.deploymentId);
    if (!workspaceId) throw NotFoundError.of('Deployment', object.deploymentId);
    // Up front by the declared length, so a body the workspace has no room for is never read.
    if (contentLength !== undefined)
      await this.quotas.assertUploadBytes(this.dataSource.manager, workspaceId, Number(contentLength));

    const file = uploadFilePath(this.config.dataDir, objectPath);
    const part = `${file}.part`;
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    // Exclusive create: a second PUT racing the first must not write into the same file.
    const handle = await open(part, 'wx').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'EEXIST') throw new ConflictError(`An upload to this URL is already in progress.`);
      throw err;
    });

    const hash = createHash('sha256');
    // The same entry rules as the builder's extraction (and its 10x expansion limit), so a
    // hostile archive is refused here, with the client still listening.
    const archive = inspectArchiveStream(10 * max);
    let size = 0;
    let head = Buffer.alloc(0);
    const guard = new Transform({
      transform: (chunk: Buffer, _encoding, callback) => {
        size += chunk.length;
        if (size > max) return callback(this.tooLarge());
        if (head.length < GZIP_MAGIC.length) {
          head = Buffer.concat([head, chunk.subarray(0, GZIP_MAGIC.length - head.length)]);
          if (head.length === GZIP_MAGIC.length && !head.equals(GZIP_MAGIC)) return callback(notGzip());
        }
        hash.update(chunk);
        archive.write(chunk);
        callback(null, chunk);
      },
      flush: (callback) => {
        if (head.length < GZIP_MAGIC.length) return callback(notGzip());
        archive.end().then((refused) => callback(refused ? new BadRequestError(refused) : null), callback);
      },
    });

    // The request is fed through a PassThrough rather than handed to pipeline(), which would
    // destroy it on error and with it the socket, so the client would never see our 413/400.
    const source = new PassThrough();
    body.pipe(source);
    const stopWatching = finished(body, (err) => {
      if (err) source.destroy(new BadRequestError('The upload was interrupted before the body was complete.'));
    });
    try {
      await pipeline(source, guard, handle.createWriteStream());
    } catch (err) {
      body.unpipe(source);
      // Discard the rest rather than leave it unread: the connection closes after the answer
      // (streamBody route), and unread bytes at close turn the FIN into a reset the client may
      // see before our answer.
      body.resume();
      await rm(part, { force: true });
      throw err;
    } finally {
      stopWatching();
      await handle.close().catch(() => undefined);
    }

    await this.dataSource
      .transaction(async (m) => {
        // Locked, so a delete of the deployment (cascading to this row) cannot interleave.
        await this.assertOpen(m, objectPath, object.deploymentId, true);
        // Again by the real size, under the workspace lock, so parallel uploads cannot overshoot together.
        await new QuotaRepository(m).lockWorkspace(workspaceId);
        await this.quotas.assertUploadBytes(m, workspaceId, size);
        await rename(part, file);
        await new UploadRepository(m).complete(objectPath, size, hash.digest('hex'));
      })
      .catch(async (err) => {
        await rm(part, { force: true });
        throw err;
      });
  }

  /** The upload row must exist (its deployment not deleted) and not be completed yet. */
  private async assertOpen(
    manager: EntityManager,
    objectPath: string,
    deploymentId: string,
    lock = false,
  ): Promise<void> {
    const upload = await new UploadRepository(manager).state(objectPath, lock);
    if (!upload) throw NotFoundError.of('Deployment', deploymentId);
    if (upload.deploymentStatus === 'AWAITING_DELETE')
      throw new BadRequestError(`Deployment ID ${deploymentId} is being deleted.`);
    if (upload.completedAt)
      throw new ConflictError(
        `Upload ${objectPath} is already complete; request a new upload URL for another tarball.`,
      );
  }

  private tooLarge(): PayloadTooLargeError {
    return new PayloadTooLargeError(`The upload is larger than the limit of ${this.config.uploadMaxBytes} bytes.`);
  }

  private sign(object: UploadObject, expiresAt: number): string {
    const signed = Buffer.alloc(SIGNED_LENGTH);
    signed.writeUInt8(TOKEN_VERSION, 0);
    uuidBytes(object.deploymentId).copy(signed, 1);
    uuidBytes(object.uploadId).copy(signed, 17);
    signed.writeBigUInt64BE(BigInt(expiresAt), 33);
    return Buffer.concat([signed, this.mac(signed)]).toString('base64url');
  }

  /** The object a token names, or 401 for anything forged, altered, malformed or expired. */
  private verify(token: string): UploadObject {
    const raw = /^[A-Za-z0-9_-]+$/.test(token) ? Buffer.from(token, 'base64url') : Buffer.alloc(0);
    if (raw.length !== TOKEN_LENGTH || raw.toString('base64url') !== token || raw.readUInt8(0) !== TOKEN_VERSION) {
      throw new UnauthorizedError(INVALID_TOKEN);
    }
    const signed = raw.subarray(0, SIGNED_LENGTH);
    if (!timingSafeEqual(raw.subarray(SIGNED_LENGTH), this.mac(signed))) throw new UnauthorizedError(INVALID_TOKEN);
    if (Number(signed.readBigUInt64BE(33)) <= this.now()) throw new UnauthorizedError(INVALID_TOKEN);
    return { deploymentId: uuidOf(signed.subarray(1, 17)), uploadId: uuidOf(signed.subarray(17, 33)) };
  }

  private mac(data: Buffer): Buffer {
    return createHmac('sha256', this.key).update(data).digest();
  }
}

function notGzip(): BadRequestError {
  return new BadRequestError('The upload is not gzip data; PUT the source as a .tar.gz archive.');
}

/**
 * For PATCH (docs/api.md, Uploads and the deploy CLIs): a revision may only be built from a completed upload of its own
 * deployment, so a client cannot point a build at another tenant's tarball or a guessed path.
 */
export async function assertUploadCompleted(
  manager: EntityManager,
  deploymentId: string,
  objectPath: string,
): Promise<void> {
  // Share-locked until the revision naming it commits, so retention cannot delete it meanwhile.
  if (!(await new UploadRepository(manager).shareCompleted(objectPath, deploymentId))) {
    throw new BadRequestError(
      `Upload ${objectPath} not found for this deployment; request one with POST /v2/deployments/${deploymentId}/upload-url.`,
    );
  }
}
