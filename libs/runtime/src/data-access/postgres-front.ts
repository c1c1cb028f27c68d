import { createHash } from 'node:crypto';
import type { Socket } from 'node:net';
import { LoopbackFront, type Upstream } from './loopback-front.js';
import { equalSecret } from './equal-secret.js';
import { MAX_HANDSHAKE_BYTES, SocketReader } from './socket-reader.js';

/** Startup-phase request codes of the Postgres wire protocol (version 3). */
const PROTOCOL_3 = 196_608;
const SSL_REQUEST = 80_877_103;
const GSSENC_REQUEST = 80_877_104;

export interface PostgresFrontOptions {
  /** Loopback address and port to listen on (0: any free port). */
  host: string;
  port: number;
  upstream: Upstream;
  /** The only role and database this front lets through (a deployment's own, same name). */
  role: string;
  database: string;
  password: string;
  onError?: (err: Error) => void;
}

/** An ErrorResponse message (severity FATAL) as the server would send it. */
export function postgresError(code: string, message: string): Buffer {
  const fields = Buffer.from(`SFATAL\0VFATAL\0C${code}\0M${message}\0\0`, 'utf8');
  const head = Buffer.alloc(5);
  head.write('E', 0);
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
}

function message(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0);
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

/** A StartupMessage (length, protocol, key\0value\0…\0) for `params`. */
export function startupMessage(params: Record<string, string>): Buffer {
  const body = Buffer.concat([int32(PROTOCOL_3), ...Object.entries(params).map(([k, v]) => Buffer.from(`${k}\0${v}\0`, 'utf8')), Buffer.from([0])]);
  return Buffer.concat([int32(body.length + 4), body]);
}

/** Reads one typed backend/frontend message: its type and body. */
export async function readMessage(reader: SocketReader): Promise<{ type: string; body: Buffer }> {
  const head = await reader.read(5);
  const length = head.readInt32BE(1);
  if (length < 4 || length > MAX_HANDSHAKE_BYTES) throw new Error(`Unexpected message length ${length}.`);
  return { type: head.toString('latin1', 0, 1), body: await reader.read(length - 4) };
}

/**
 * Reads the client's startup packet, answering SSL and GSS encryption requests with 'N' (plain
 * TCP over loopback). Returns the raw StartupMessage and its parameters; null for anything else
 * (a CancelRequest, an old protocol), which the caller closes.
 */
async function readStartup(client: Socket, reader: SocketReader): Promise<{ raw: Buffer; params: Map<string, string> } | null> {
  for (;;) {
    const lengthBytes = await reader.read(4);
    const length = lengthBytes.readInt32BE(0);
    if (length < 8 || length > MAX_HANDSHAKE_BYTES) return null;
    const body = await reader.read(length - 4);
    const code = body.readInt32BE(0);
    if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
      client.write('N');
      continue;
    }
    if (code !== PROTOCOL_3) return null;
    const parts = body.subarray(4).toString('utf8').split('\0');
    const params = new Map<string, string>();
    for (let i = 0; i + 1 < parts.length && parts[i]; i += 2) params.set(parts[i]!, parts[i + 1]!);
    return { raw: Buffer.concat([lengthBytes, body]), params };
  }
}

/**
 * A deployment's gate to Postgres, for servers that let local users in without a password
 * (`trust`): only the deployment's own role, only to its own database, only with its password.
 * The client gets an AuthenticationCleartextPassword request (plain text over loopback, never
 * leaving the machine); once the password matches the sealed one, the front opens the upstream
 * connection with the client's own startup message and relays bytes both ways. An upstream that
 * asks for a password after all gets it (cleartext or md5).
 */
export class PostgresFront extends LoopbackFront {
  constructor(private readonly options: PostgresFrontOptions) {
    super(options, options.upstream);
  }

  protected async handle(client: Socket): Promise<void> {
    const reader = new SocketReader(client);
    const refuse = (code: string, text: string) => void client.end(postgresError(code, text));
    try {
      const startup = await readStartup(client, reader);
      if (!startup) return void client.destroy();
      const { role, database } = this.options;
      const user = startup.params.get('user') ?? '';
      const db = startup.params.get('database') || user;
      if (startup.params.has('replication')) return refuse('28000', 'Replication connections are not allowed here.');
      if (user !== role || db !== database) {
        return refuse('28000', `Only role "${role}" may connect here, to database "${database}".`);
      }
      client.write(message('R', int32(3)));
      const answer = await readMessage(reader);
      const given = answer.body.subarray(0, Math.max(0, answer.body.indexOf(0)));
      if (answer.type !== 'p' || !equalSecret(given, this.options.password)) {
        return refuse('28P01', `password authentication failed for user "${role}"`);
      }
      await this.relay(client, reader, startup.raw);
    } catch (err) {
      this.options.onError?.(err as Error);
      client.destroy();
    }
  }

  /** Opens the upstream connection, finishes its authentication, then pipes both ways. */
  private async relay(client: Socket, clientReader: SocketReader, startup: Buffer): Promise<void> {
    const upstream = await this.openUpstream(client);
    const reader = new SocketReader(upstream);
    upstream.write(startup);
    for (;;) {
      const { type, body } = await readMessage(reader);
      if (type === 'E') return void client.end(message(type, body));
      if (type !== 'R') throw new Error(`Upstream sent '${type}' before authenticating.`);
      const method = body.readInt32BE(0);
      if (method === 0) {
        client.write(message(type, body));
        break;
      }
      if (method === 3) upstream.write(message('p', Buffer.from(`${this.options.password}\0`)));
      else if (method === 5) upstream.write(message('p', Buffer.from(`${md5Password(this.options.role, this.options.password, body.subarray(4, 8))}\0`)));
      else return void client.end(postgresError('28000', 'The database server asks for an authentication method this front does not speak.'));
    }
    const fromUpstream = reader.release();
    const fromClient = clientReader.release();
    if (fromUpstream.length) client.write(fromUpstream);
    if (fromClient.length) upstream.write(fromClient);
    upstream.pipe(client);
    client.pipe(upstream);
  }
}

function md5Password(user: string, password: string, salt: Buffer): string {
  const inner = createHash('md5').update(password + user).digest('hex');
  return 'md5' + createHash('md5').update(Buffer.concat([Buffer.from(inner), salt])).digest('hex');
}
