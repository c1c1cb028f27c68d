import { createHash } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { serialize } from 'pg-protocol';
import type { BackendMessage } from 'pg-protocol/dist/messages.js';
import { Parser } from 'pg-protocol/dist/parser.js';
import { equalSecret } from './equal-secret.js';
import { LoopbackFront, type Upstream } from './loopback-front.js';
import {
  pgMessage,
  postgresError,
  readClientStartup,
  readMessage,
  startupMessage,
  startupRefusal,
} from './postgres-startup.js';
import { SocketReader } from './socket-reader.js';

export { postgresError, readMessage, startupMessage } from './postgres-startup.js';

export interface PostgresFrontOptions {
  /** Loopback address and port to listen on (0: any free port). */
  host: string;
  port: number;
  upstream: Upstream;
  /** The only role and database this front lets through (a deployment's own, same name). */
  role: string;
  database: string;
  password: string;
  /** The most connections it relays at once (the role's CONNECTION LIMIT); more are refused with 53300. None: no bound. */
  maxConnections?: number;
  onError?: (err: Error) => void;
}

/** One whole backend message, read by pg-protocol's parser (the one `pg` uses). */
function parseBackend(raw: Buffer): BackendMessage {
  let parsed: BackendMessage | undefined;
  new Parser().parse(raw, (m) => (parsed = m));
  if (!parsed) throw new Error('Unreadable message from the database server.');
  return parsed;
}

/**
 * A deployment's gate to Postgres, for servers that let local users in without a password
 * (`trust`): only the deployment's own role, only to its own database, only with its password,
 * and no startup setting that names another role (startupRefusal). The client gets an
 * AuthenticationCleartextPassword request (plain text over loopback, never leaving the machine);
 * once the password matches the sealed one, the front opens the upstream connection with a
 * startup message of its own writing (the parameters it checked, nothing else) and relays the
 * server's answers (read with pg-protocol's parser) up to ReadyForQuery, then bytes both ways.
 * An upstream that asks for a password after all gets it (cleartext or md5). A CancelRequest is
 * passed on only for a connection this front relays (its key seen in BackendKeyData). At most
 * `maxConnections` are relayed at once: one more gets the server's too_many_connections (53300)
 * from the front itself, so one deployment cannot take every connection slot of the server.
 */
export class PostgresFront extends LoopbackFront {
  /** "pid:key" of the connections this front relays, for CancelRequests. */
  private readonly cancelKeys = new Set<string>();

  constructor(private readonly options: PostgresFrontOptions) {
    super(options, options.upstream);
  }

  protected async handle(client: Socket): Promise<void> {
    const reader = new SocketReader(client);
    const refuse = (code: string, text: string) => void client.end(postgresError(code, text));
    try {
      const startup = await readClientStartup(client, reader);
      if (startup.kind === 'cancel') return this.cancel(client, startup.processId, startup.secretKey);
      if (startup.kind === 'refused') return refuse('08P01', startup.reason);
      const { role, database } = this.options;
      const refusal = startupRefusal(startup.params, role, database);
      if (refusal) return refuse('28000', refusal);
      client.write(pgMessage('R', Buffer.from([0, 0, 0, 3])));
      const answer = await readMessage(reader);
      const given = answer.body.subarray(0, Math.max(0, answer.body.indexOf(0)));
      if (answer.type !== 'p' || !equalSecret(given, this.options.password)) {
        return refuse('28P01', `password authentication failed for user "${role}"`);
      }
      // Counted once the password matched: a stranger on the machine cannot take the deployment's slots.
      const { maxConnections } = this.options;
      if (!this.admit(client, maxConnections)) {
        return refuse(
          '53300',
          `too many connections for role "${role}": this deployment may hold at most ${maxConnections} database connections at once`,
        );
      }
      const params = Object.fromEntries(startup.params);
      await this.relay(client, reader, startupMessage({ ...params, user: role, database }));
    } catch (err) {
      this.options.onError?.(err as Error);
      client.destroy();
    }
  }

  /** Passes a CancelRequest on for a connection of this front's; either way the client is closed (as the server does). */
  private cancel(client: Socket, processId: number, secretKey: number): void {
    client.destroy();
    if (!this.cancelKeys.has(`${processId}:${secretKey}`)) return;
    const upstream = connect(this.upstreamAddress, () => upstream.end(serialize.cancel(processId, secretKey)));
    upstream.on('error', () => upstream.destroy());
  }

  /** Opens the upstream connection, finishes its authentication and start-up, then pipes both ways. */
  private async relay(client: Socket, clientReader: SocketReader, startup: Buffer): Promise<void> {
    const upstream = await this.openUpstream(client);
    const reader = new SocketReader(upstream);
    upstream.write(startup);
    for (let ready = false; !ready; ) {
      const { raw } = await readMessage(reader);
      const message = parseBackend(raw);
      switch (message.name) {
        case 'authenticationCleartextPassword':
          upstream.write(serialize.password(this.options.password));
          continue;
        case 'authenticationMD5Password':
          upstream.write(
            serialize.password(
              md5Password(this.options.role, this.options.password, (message as unknown as { salt: Buffer }).salt),
            ),
          );
          continue;
        case 'authenticationOk':
        case 'parameterStatus':
        case 'notice':
          break;
        case 'backendKeyData': {
          const { processID, secretKey } = message as unknown as { processID: number; secretKey: number };
          const key = `${processID}:${secretKey}`;
          this.cancelKeys.add(key);
          client.once('close', () => this.cancelKeys.delete(key));
          break;
        }
        case 'readyForQuery':
          ready = true;
          break;
        case 'error':
          return void client.end(raw);
        default:
          if (message.name.startsWith('authentication')) {
            return void client.end(
              postgresError(
                '28000',
                'The database server asks for an authentication method this front does not speak.',
              ),
            );
          }
          throw new Error(`Upstream sent '${message.name}' during start-up.`);
      }
      client.write(raw);
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
  const inner = createHash('md5')
    .update(password + user)
    .digest('hex');
  return (
    'md5' +
    createHash('md5')
      .update(Buffer.concat([Buffer.from(inner), salt]))
      .digest('hex')
  );
}
