import { pipeline, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { PayloadTooLargeError, UnprocessableError, UnsupportedMediaTypeError } from './errors.js';
import type { IngestLimits } from './limits.js';
import { boundaryOf, MultipartParser } from './multipart.js';
import { unstorable, validateOperation, type RunOperation } from './run-ops.js';

/**
 * The request body, decoded: gzip (the only encoding /info advertises) is inflated as it
 * arrives, and decoded bytes count against the limit, so a small bomb is refused as soon as it
 * has grown past it. Anything else in Content-Encoding is a 415.
 */
async function* decoded(body: Readable, encoding: string | undefined, limits: IngestLimits): AsyncGenerator<Buffer> {
  const coding = (encoding ?? 'identity').trim().toLowerCase();
  if (coding !== 'identity' && coding !== 'gzip' && coding !== '')
    throw new UnsupportedMediaTypeError(`Content-Encoding ${coding} is not supported; send gzip or none.`);
  let raw = 0;
  // pipeline, not pipe: a body that ends early (the client gone, the server's request timeout)
  // fails the gunzip too, so the loop below ends and its ingest slot is given back.
  const source =
    coding === 'gzip'
      ? pipeline(body, createGunzip({ maxOutputLength: limits.maxBodyBytes + 1 }), () => undefined)
      : body;
  if (coding === 'gzip')
    body.on('data', (chunk: Buffer) => {
      raw += chunk.length;
      if (raw > limits.maxBodyBytes)
        source.destroy(new PayloadTooLargeError(`The body is larger than ${limits.maxBodyBytes} bytes.`));
    });
  try {
    for await (const chunk of source) yield chunk as Buffer;
  } catch (err) {
    if (err instanceof PayloadTooLargeError) throw err;
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
      throw new PayloadTooLargeError(`The body is larger than ${limits.maxBodyBytes} bytes.`);
    if (
      coding === 'gzip' &&
      /^Z_|incorrect header|unexpected end/i.test(
        `${(err as NodeJS.ErrnoException).code ?? ''} ${(err as Error).message}`,
      )
    ) {
      throw new UnprocessableError('The body is not valid gzip data.');
    }
    throw err;
  } finally {
    if (source !== body) source.destroy();
  }
}

/** A whole JSON body, bounded; 422 when it is not JSON. */
export async function readJsonBody(
  body: Readable,
  headers: Record<string, unknown>,
  limits: IngestLimits,
): Promise<unknown> {
  const type = String(headers['content-type'] ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
  if (type !== 'application/json') throw new UnsupportedMediaTypeError('Send application/json.');
  return parseJson(await readBodyBytes(body, headers, limits), 'body');
}

/** A whole body's bytes, decoded (gzip) and bounded by `maxBodyBytes`, whatever its content type. */
export async function readBodyBytes(
  body: Readable,
  headers: Record<string, unknown>,
  limits: IngestLimits,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of decoded(body, headers['content-encoding'] as string | undefined, limits)) {
    size += chunk.length;
    if (size > limits.maxBodyBytes)
      throw new PayloadTooLargeError(`The body is larger than ${limits.maxBodyBytes} bytes.`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** JSON text → value; 422 naming `where` when it is not JSON (or holds a NUL byte). */
export function parseJson(bytes: Buffer, where: string): unknown {
  const text = bytes.toString('utf8');
  // A NUL byte is never JSON; U+FFFD means bytes that were not UTF-8 (and Postgres stores neither).
  if (text.includes('\u0000')) throw new UnprocessableError(`${where}: contains a NUL byte.`);
  try {
    return JSON.parse(text);
  } catch {
    throw new UnprocessableError(`${where}: not valid JSON.`);
  }
}

const FIELD_PARTS = new Set(['inputs', 'outputs', 'events', 'extra', 'error', 'serialized']);
const RUN_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The run operations of a `POST /runs/multipart` body. Parts are `post.<id>` / `patch.<id>` (the
 * run), `post.<id>.<field>` (one of its large fields, or `error`), `attachment.<id>.<name>` and
 * `feedback.<id>` (accepted and not stored yet). The whole body is read and every run validated
 * before anything is returned: a bad part refuses the batch.
 */
export async function readMultipartOperations(
  body: Readable,
  headers: Record<string, unknown>,
  limits: IngestLimits,
): Promise<RunOperation[]> {
  const boundary = boundaryOf(headers['content-type'] as string | undefined);
  if (!boundary) throw new UnsupportedMediaTypeError('Send multipart/form-data with a boundary.');
  const parser = new MultipartParser(boundary, limits);
  for await (const chunk of decoded(body, headers['content-encoding'] as string | undefined, limits))
    parser.push(chunk);
  const parts = parser.end();

  const runs = new Map<string, { kind: 'post' | 'patch'; id: string; fields: Record<string, unknown> }>();
  const order: string[] = [];
  const fieldParts: Array<{ key: string; field: string; value: unknown }> = [];
  for (const part of parts) {
    if (part.name.includes('\u0000')) throw new UnprocessableError('A part name contains a NUL byte.');
    const declared = /;\s*length=(\d+)/i.exec(part.contentType)?.[1];
    if (declared !== undefined && Number(declared) !== part.data.length) {
      throw new UnprocessableError(
        `Part ${part.name.slice(0, 200)}: its length=${declared} does not match its ${part.data.length} bytes.`,
      );
    }
    const [kind, id, field, ...rest] = part.name.split('.');
    if ((kind === 'attachment' || kind === 'feedback') && id && RUN_ID.test(id)) continue;
    if (
      (kind !== 'post' && kind !== 'patch') ||
      !id ||
      !RUN_ID.test(id) ||
      rest.length ||
      (field !== undefined && !FIELD_PARTS.has(field))
    ) {
      throw new UnprocessableError(`Unknown part name ${JSON.stringify(part.name.slice(0, 200))}.`);
    }
    const value = parseJson(part.data, `part ${part.name}`);
    const key = `${kind}.${id.toLowerCase()}`;
    if (field === undefined) {
      if (!value || typeof value !== 'object' || Array.isArray(value))
        throw new UnprocessableError(`Part ${part.name}: a run is a JSON object.`);
      if (runs.has(key)) throw new UnprocessableError(`Part ${part.name} appears twice.`);
      runs.set(key, { kind, id, fields: value as Record<string, unknown> });
      order.push(key);
    } else fieldParts.push({ key, field, value });
  }
  for (const { key, field, value } of fieldParts) {
    const run = runs.get(key);
    if (!run) throw new UnprocessableError(`Part ${key}.${field} has no ${key} part.`);
    run.fields[field] = value;
  }
  if (order.length > limits.maxOperations)
    throw new PayloadTooLargeError(`More than ${limits.maxOperations} run operations in one request.`);
  return order.map((key) => {
    const run = runs.get(key)!;
    if (run.fields.id !== undefined && String(run.fields.id).toLowerCase() !== run.id.toLowerCase()) {
      throw new UnprocessableError(`Part ${key}: its id is not the one its name says.`);
    }
    return validateOperation(run.kind === 'post' ? 'create' : 'update', { ...run.fields, id: run.id }, `run ${run.id}`);
  });
}

/** The operations of a `POST /runs/batch` body: `{post: [...], patch: [...]}`. */
export function batchOperations(body: unknown, limits: IngestLimits): RunOperation[] {
  const bad = unstorable(body);
  if (bad) throw new UnprocessableError(`body: ${bad}.`);
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw new UnprocessableError('body: expected {"post": [...], "patch": [...]}.');
  const { post = [], patch = [] } = body as { post?: unknown; patch?: unknown };
  if (!Array.isArray(post) || !Array.isArray(patch))
    throw new UnprocessableError('body: "post" and "patch" are arrays of runs.');
  if (post.length + patch.length > limits.maxOperations)
    throw new PayloadTooLargeError(`More than ${limits.maxOperations} run operations in one request.`);
  return [
    ...post.map((run, i) => validateOperation('create', run, `post[${i}]`)),
    ...patch.map((run, i) => validateOperation('update', run, `patch[${i}]`)),
  ];
}
