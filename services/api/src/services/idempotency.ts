import { createHmac } from 'node:crypto';
import { ConflictError } from '@slipway/domain';
import { queryRows, type DataSource, type EntityManager } from '@slipway/db';
import type { HandlerResult } from '../http/route.js';

const TTL = "interval '24 hours'";

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
  await manager.query(`DELETE FROM idempotency_keys WHERE workspace_id = $1 AND key = $2 AND created_at < now() - ${TTL}`, [
    workspaceId,
    key,
  ]);
  const inserted = await queryRows(
    manager,
    `INSERT INTO idempotency_keys (workspace_id, key, request_hash, response_status)
     VALUES ($1, $2, $3, 0) ON CONFLICT DO NOTHING RETURNING key`,
    [workspaceId, key, fingerprint],
  );
  if (inserted.length) {
    const result = await run();
    await manager.query(
      `UPDATE idempotency_keys SET response_status = $3, response_body = $4 WHERE workspace_id = $1 AND key = $2`,
      [workspaceId, key, result.status, JSON.stringify(result.body ?? null)],
    );
    return result;
  }
  const [stored] = await queryRows<{ request_hash: string; response_status: number; response_body: unknown }>(
    manager,
    `SELECT request_hash, response_status, response_body FROM idempotency_keys WHERE workspace_id = $1 AND key = $2`,
    [workspaceId, key],
  );
  if (!stored || stored.request_hash !== fingerprint) {
    throw new ConflictError(`Idempotency-Key '${key}' was already used with a different request.`);
  }
  return { status: stored.response_status, body: stored.response_body ?? undefined, headers: { 'Idempotent-Replayed': 'true' } };
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

  run(workspaceId: string, idempotency: IdempotencyInput, write: (manager: EntityManager) => Promise<HandlerResult>): Promise<HandlerResult> {
    const { key, request } = idempotency;
    const fingerprint = key && request ? requestFingerprint(this.hmacKey, request) : '';
    return this.dataSource.transaction((manager) => withIdempotency(manager, workspaceId, key, fingerprint, () => write(manager)));
  }
}
