import type { Socket } from 'node:net';
import { equalSecret } from './equal-secret.js';
import { LoopbackFront, type Upstream } from './loopback-front.js';
import { encodeCommand, parseCommand, type RespCommand } from './resp-requests.js';
import { SocketReader } from './socket-reader.js';

export interface RedisFrontOptions {
  host: string;
  /** 0: any free port. */
  port: number;
  upstream: Upstream;
  /** The deployment's ACL user and its password. */
  username: string;
  password: string;
  onError?: (err: Error) => void;
}

/**
 * Commands sent upstream in place of a refused one. Upstream answers each with an "unknown
 * command" error that names it, in order with the replies to the commands around it — so
 * pipelining and MULTI keep their reply order without the front parsing replies.
 */
const NOAUTH = encodeCommand(['SLIPWAY-FRONT:NOAUTH-authenticate-as-the-deployment-user-first']);
const SWITCH_REFUSED = encodeCommand(['SLIPWAY-FRONT:refused-only-the-deployment-user-may-authenticate-here']);

type Verdict = 'forward' | 'authenticated' | 'refuse-switch' | 'refuse-noauth';

/**
 * A deployment's gate to Redis, for servers whose `default` user needs no password. It connects
 * upstream as the deployment's ACL user itself, then relays the client's commands, reading each
 * one: the client must first authenticate as that same user with its password (AUTH or HELLO …
 * AUTH), and any later attempt to become another user (AUTH default, HELLO … AUTH other, RESET,
 * which falls back to `default`) is refused. What the user may do is left to its ACL rules.
 */
export class RedisFront extends LoopbackFront {
  constructor(private readonly options: RedisFrontOptions) {
    super(options, options.upstream);
  }

  /** What to do with one command, given whether the client has authenticated yet. */
  private verdict(command: RespCommand, authenticated: boolean): Verdict {
    const [name = '', ...args] = command.args;
    const verb = name.toUpperCase();
    const own = (user: string | undefined, password: string | undefined) =>
      user === this.options.username && password !== undefined && equalSecret(password, this.options.password);
    if (verb === 'AUTH') {
      // AUTH <password> means the `default` user.
      const [user, password] = args.length >= 2 ? [args[0], args[1]] : ['default', args[0]];
      return own(user, password) ? 'authenticated' : 'refuse-switch';
    }
    if (verb === 'HELLO') {
      const at = args.findIndex((a, i) => i >= 1 && a.toUpperCase() === 'AUTH');
      if (at >= 0) return own(args[at + 1], args[at + 2]) ? 'authenticated' : 'refuse-switch';
      return authenticated ? 'forward' : 'refuse-noauth';
    }
    if (verb === 'RESET') return 'refuse-switch';
    if (verb === 'QUIT') return 'forward';
    return authenticated ? 'forward' : 'refuse-noauth';
  }

  protected async handle(client: Socket): Promise<void> {
    client.pause();
    let upstream: Socket;
    try {
      upstream = await this.openUpstream(client);
      const reader = new SocketReader(upstream);
      upstream.write(encodeCommand(['AUTH', this.options.username, this.options.password]));
      const reply = await reader.line();
      if (reply !== '+OK') {
        client.end(`-ERR Slipway could not open this deployment's Redis user (${reply.replace(/^-/, '').slice(0, 120)})\r\n`);
        return;
      }
      const rest = reader.release();
      if (rest.length) client.write(rest);
      upstream.pipe(client);
    } catch (err) {
      this.options.onError?.(err as Error);
      client.destroy();
      return;
    }

    let authenticated = false;
    // Chunks are joined only once a whole command can be there, so a large value costs one copy.
    let chunks: Buffer[] = [];
    let received = 0;
    let need = 1;
    client.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      received += chunk.length;
      if (received < need) return;
      let pending = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      const out: Buffer[] = [];
      for (;;) {
        const parsed = parseCommand(pending);
        if ('error' in parsed) {
          if (out.length) upstream.write(Buffer.concat(out));
          client.end(`-ERR Protocol error: ${parsed.error}\r\n`);
          return;
        }
        if ('need' in parsed) {
          need = parsed.need;
          chunks = pending.length ? [pending] : [];
          received = pending.length;
          break;
        }
        pending = parsed.rest;
        const verdict = this.verdict(parsed.command, authenticated);
        if (verdict === 'authenticated') authenticated = true;
        out.push(verdict === 'refuse-switch' ? SWITCH_REFUSED : verdict === 'refuse-noauth' ? NOAUTH : parsed.command.raw);
      }
      if (out.length) upstream.write(Buffer.concat(out));
    });
    client.on('end', () => upstream.end());
    client.resume();
  }
}
