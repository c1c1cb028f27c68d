/**
 * Bounds of one ingest request. Every byte a client sends is counted against them before it is
 * kept, so a tenant cannot make the api hold more than `maxBodyBytes` per request, whatever the
 * encoding (gzip counts its decompressed bytes).
 */
export interface IngestLimits {
  /** The whole body, decompressed. */
  maxBodyBytes: number;
  /** One multipart part (a run's inputs, say). */
  maxPartBytes: number;
  /** Multipart headers of one part. */
  maxPartHeaderBytes: number;
  /** Parts of one multipart body. */
  maxParts: number;
  /** Run operations (creates and updates) of one request. */
  maxOperations: number;
  /** A large field (inputs, outputs, events, serialized, extra) above this is stored cut. */
  maxStoredFieldBytes: number;
  /** A run may start at most this long ago (each day is a partition: this bounds how many a client makes). */
  maxRunAgeMs: number;
  /** … and at most this far ahead of the server's clock. */
  maxClockSkewMs: number;
  /**
   * How long a write waits for the locks of its runs (other writes of the same runs hold them)
   * before it is refused with 429: waiting, it holds a database connection the api's other
   * requests need.
   */
  maxLockWaitMs: number;
}

export const DEFAULT_INGEST_LIMITS: Readonly<IngestLimits> = Object.freeze({
  maxBodyBytes: 24 * 1024 * 1024,
  maxPartBytes: 16 * 1024 * 1024,
  maxPartHeaderBytes: 8 * 1024,
  maxParts: 5_000,
  maxOperations: 1_000,
  maxStoredFieldBytes: 1024 * 1024,
  maxRunAgeMs: 31 * 24 * 3600_000,
  maxClockSkewMs: 24 * 3600_000,
  maxLockWaitMs: 5_000,
});

/** What `GET /info` advertises: batches the client sends stay well inside the limits above. */
export const BATCH_SIZE_LIMIT_BYTES = 16 * 1024 * 1024;
export const BATCH_SIZE_LIMIT = 100;
