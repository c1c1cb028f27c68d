import { createHmac } from 'node:crypto';
import { ConflictError } from '@slipway/domain';
import { IdempotencyRepository, type DataSource, type EntityManager } from '@slipway/db';
import type { HandlerResult } from './route.js';

/**
 * The request a key was first used with: operation, path parameters and canonical body, as an
 * HMAC under a server key. Bodies can carry secret values; a plain hash of them could be
 * brute-forced offline from a database dump, an HMAC cannot without the key.
 */
export function requestFingerprint(hmacKey: Buffer, request: IdempotentRequest): string {
  return createHmac('sha256', hmacKey)
    .update(`${request.operation}\n${canonicalJson(request.params ?? {})}\n${canonicalJson(request.body ?? null)}`)
    .digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * `Idempotency-Key` inside the business transaction: the key row and the rows it guards commit
 * or roll back together. A concurrent request with the same key blocks on the key's primary
 * key until the first commits, then replays its response; a failed first attempt leaves no key
 * behind, so a retry runs again. Same key with another request → 409. Keys live 24 hours.
 */
export async function withIdempotency(
  manager: EntityManager,
  workspaceId: string,
  key: string | undefined,
  fingerprint: string,
  run: () => Promise<HandlerResult>,
): Promise<HandlerResult> {
  if (!key) return run();
  const keys = new IdempotencyRepository(manager);
  await keys.dropExpired(workspaceId, key);
  if (await keys.claim(workspaceId, key, fingerprint)) {
    const result = await run();
    await keys.recordResponse(workspaceId, key, result.status, result.body);
    return result;
  }
  const stored = await keys.find(workspaceId, key);
  if (!stored || stored.requestHash !== fingerprint) {
    throw new ConflictError(`Idempotency-Key '${key}' was already used with a different request.`);
  }
  return {
    status: stored.responseStatus,
    body: stored.responseBody ?? undefined,
    headers: { 'Idempotent-Replayed': 'true' },
  };
}

/** What identifies a request for `Idempotency-Key` purposes. */
export interface IdempotentRequest {
  operation: string;
  params?: unknown;
  body?: unknown;
}

/** The validated `Idempotency-Key` header (if any) and the request it guards. */
export interface IdempotencyInput {
  key?: string;
  request?: IdempotentRequest;
}

/**
 * Runs a write in one transaction, replayed or refused per its `Idempotency-Key` (if any).
 * Services receive the transaction's EntityManager, so every row they touch commits together.
 */
export class WriteRunner {
  constructor(
    private readonly dataSource: DataSource,
    private readonly hmacKey: Buffer,
  ) {}

  run(
    workspaceId: string,
    idempotency: IdempotencyInput,
    write: (manager: EntityManager) => Promise<HandlerResult>,
  ): Promise<HandlerResult> {
    const { key, request } = idempotency;
    const fingerprint = key && request ? requestFingerprint(this.hmacKey, request) : '';
    return this.dataSource.transaction((manager) =>
      withIdempotency(manager, workspaceId, key, fingerprint, () => write(manager)),
    );
  }
}
