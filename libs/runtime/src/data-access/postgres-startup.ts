import type { Socket } from 'node:net';
import { MAX_HANDSHAKE_BYTES, type SocketReader } from './socket-reader.js';

/** Startup-phase request codes of the Postgres wire protocol (version 3). */
const PROTOCOL_3 = 196_608;
const SSL_REQUEST = 80_877_103;
const GSSENC_REQUEST = 80_877_104;
const CANCEL_REQUEST = 80_877_102;

const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

/** A typed message (type byte, length, body) as the server or a client sends it. */
export function pgMessage(type: string, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(type, 'latin1'), int32(body.length + 4), body]);
}

/** An ErrorResponse message (severity FATAL) as the server would send it. */
export function postgresError(code: string, message: string): Buffer {
  return pgMessage('E', Buffer.from(`SFATAL\0VFATAL\0C${code}\0M${message}\0\0`, 'utf8'));
}

/**
 * A StartupMessage (length, protocol, key\0value\0…\0) for `params`, in their order. (pg-protocol's
 * serializer always adds client_encoding=UTF8, overriding a client's own choice, so the front
 * writes its own.)
 */
export function startupMessage(params: Record<string, string>): Buffer {
  const body = Buffer.concat([
    int32(PROTOCOL_3),
    ...Object.entries(params).map(([k, v]) => Buffer.from(`${k}\0${v}\0`, 'utf8')),
    Buffer.from([0]),
  ]);
  return Buffer.concat([int32(body.length + 4), body]);
}

/** Reads one typed message: its type and body (bounded by MAX_HANDSHAKE_BYTES). */
export async function readMessage(reader: SocketReader): Promise<{ type: string; body: Buffer; raw: Buffer }> {
  const head = await reader.read(5);
  const length = head.readInt32BE(1);
  if (length < 4 || length > MAX_HANDSHAKE_BYTES) throw new Error(`Unexpected message length ${length}.`);
  const body = await reader.read(length - 4);
  return { type: head.toString('latin1', 0, 1), body, raw: Buffer.concat([head, body]) };
}

export type ClientStartup =
  | { kind: 'startup'; params: Map<string, string> }
  | { kind: 'cancel'; processId: number; secretKey: number }
  | { kind: 'refused'; reason: string };

/**
 * Reads the client's startup packet as the server does (postmaster.c, ProcessStartupPacket),
 * answering SSL and GSS encryption requests with 'N' (plain TCP over loopback). A parameter named
 * twice is refused rather than guessed at (the server takes the last).
 */
export async function readClientStartup(client: Socket, reader: SocketReader): Promise<ClientStartup> {
  for (;;) {
    const length = (await reader.read(4)).readInt32BE(0);
    if (length < 8 || length > MAX_HANDSHAKE_BYTES)
      return { kind: 'refused', reason: 'invalid length of startup packet' };
    const body = await reader.read(length - 4);
    const code = body.readInt32BE(0);
    if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
      client.write('N');
      continue;
    }
    if (code === CANCEL_REQUEST) {
      if (length !== 16) return { kind: 'refused', reason: 'invalid length of cancel request' };
      return { kind: 'cancel', processId: body.readInt32BE(4), secretKey: body.readInt32BE(8) };
    }
    if (code !== PROTOCOL_3) return { kind: 'refused', reason: 'unsupported frontend protocol' };
    const rest = body.subarray(4);
    if (rest[rest.length - 1] !== 0)
      return { kind: 'refused', reason: 'invalid startup packet layout: expected terminator as last byte' };
    const parts = rest.subarray(0, -1).toString('utf8').split('\0');
    parts.pop(); // after the last value's terminator
    if (parts.length % 2) return { kind: 'refused', reason: 'invalid startup packet layout' };
    const params = new Map<string, string>();
    for (let i = 0; i < parts.length; i += 2) {
      if (params.has(parts[i]!)) return { kind: 'refused', reason: `startup parameter "${parts[i]}" given twice` };
      params.set(parts[i]!, parts[i + 1]!);
    }
    return { kind: 'startup', params };
  }
}

/** Settings that would make the session another role, however they are spelled in a startup packet. */
const IDENTITY_SETTINGS = /role|session_authorization/;

/**
 * Why a startup packet may not pass (null: it may): only the deployment's own role and
 * database, no replication, and no setting that names another identity (`role`,
 * `session_authorization`, directly or inside `options`, whose backslash escapes are undone first;
 * GUC names are case-insensitive). The role's own privileges refuse these too; this is the front's
 * own refusal, before the server is asked.
 */
export function startupRefusal(params: Map<string, string>, role: string, database: string): string | null {
  const user = params.get('user') ?? '';
  const db = params.get('database') || user;
  if (params.has('replication')) return 'Replication connections are not allowed here.';
  if (user !== role || db !== database) return `Only role "${role}" may connect here, to database "${database}".`;
  for (const [name, value] of params) {
    const setting = name.toLowerCase() === 'options' ? value.replace(/\\/g, '').toLowerCase() : name.toLowerCase();
    if (name !== 'user' && name !== 'database' && IDENTITY_SETTINGS.test(setting))
      return `The startup parameter "${name}" may not set a role here.`;
  }
  return null;
}
