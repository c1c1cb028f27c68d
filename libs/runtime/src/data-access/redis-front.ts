import type { Socket } from 'node:net';
import { equalSecret } from './equal-secret.js';
import { LoopbackFront, type Upstream } from './loopback-front.js';
import { DENIED_REDIS_COMMANDS, deniedRedisCommand } from './redis-acl.js';
import { encodeCommand, RespProtocolError, RespRequestParser } from './resp-requests.js';
import { SocketReader } from './socket-reader.js';

export interface RedisFrontOptions {
  host: string;
  /** 0: any free port. */
  port: number;
  upstream: Upstream;
  /** The deployment's ACL user and its password. */
  username: string;
  password: string;
  /** The most connections it relays at once; more are answered `-ERR max number of clients reached` and closed. None: no bound. */
  maxConnections?: number;
  onError?: (err: Error) => void;
}

/**
 * Commands sent upstream in place of a refused one. Upstream answers each with an "unknown
 * command" error that names it, in order with the replies to the commands around it — so
 * pipelining and MULTI keep their reply order without the front parsing replies.
 */
const NOAUTH = encodeCommand(['SLIPWAY-FRONT:NOAUTH-authenticate-as-the-deployment-user-first']);
const SWITCH_REFUSED = encodeCommand(['SLIPWAY-FRONT:refused-only-the-deployment-user-may-authenticate-here']);
/** Per denied command (DENIED_REDIS_COMMANDS), what is sent upstream in its place: the error names it. */
const COMMAND_REFUSED = new Map(
  DENIED_REDIS_COMMANDS.map((name) => [
    name,
    encodeCommand([`SLIPWAY-FRONT:NOPERM-deployments-may-not-run-${name.toUpperCase()}`]),
  ]),
);

type Verdict = 'forward' | 'authenticated' | 'refuse-switch' | 'refuse-noauth' | 'refuse-command';

/**
 * A word as the server compares it (strcasecmp on a C string): ASCII case folded, ended by the
 * first NUL. So "AUTH\0junk" is AUTH to the front, as it may be to the server.
 */
function word(arg: Buffer | undefined): string {
  if (!arg) return '';
  const nul = arg.indexOf(0);
  return (nul < 0 ? arg : arg.subarray(0, nul)).toString('latin1').replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/**
 * A deployment's gate to Redis, for servers whose `default` user needs no password. It connects
 * upstream as the deployment's ACL user itself, then relays the client's commands, reading each
 * one with RespRequestParser (RESP arrays and inline commands, any split, re-sent as canonical
 * RESP): the client must first authenticate as that same user with its password (AUTH or HELLO …
 * AUTH), and any attempt to name another user (AUTH <password> meaning `default`, AUTH other,
 * HELLO with any AUTH option not the deployment's own, RESET, which falls back to `default`) is
 * refused in place: the connection stays the deployment's user. Commands of
 * DENIED_REDIS_COMMANDS (the same list its ACL rules deny) are refused in place too, so another
 * tenant's channels and keys stay out of reach even if the ACL were looser; the rest is left to
 * the ACL rules. At most `maxConnections` client connections are relayed at once (Redis has no
 * per-user bound): one more is answered as the server answers past `maxclients`, then closed.
 */
export class RedisFront extends LoopbackFront {
  constructor(private readonly options: RedisFrontOptions) {
    super(options, options.upstream);
  }

  private own(user: Buffer | undefined, password: Buffer | undefined): boolean {
    return (
      !!user &&
      !!password &&
      user.equals(Buffer.from(this.options.username)) &&
      equalSecret(password, this.options.password)
    );
  }

  /** What to do with one command (its name and, for AUTH and HELLO, its arguments). */
  private verdict(args: Buffer[], authenticated: boolean, whole: boolean): Verdict {
    const verb = word(args[0]);
    if (verb === 'auth') {
      // AUTH <password> means the `default` user; other counts are the server's syntax error.
      return whole && args.length === 3 && this.own(args[1], args[2]) ? 'authenticated' : 'refuse-switch';
    }
    if (verb === 'hello') {
      if (!whole) return 'refuse-switch';
      // The server takes the last AUTH option; every one (wherever it is) must be the deployment's.
      let named = false;
      for (let j = 2; j + 2 < args.length; j++) {
        if (word(args[j]) !== 'auth') continue;
        if (!this.own(args[j + 1], args[j + 2])) return 'refuse-switch';
        named = true;
      }
      if (named) return 'authenticated';
      return authenticated ? 'forward' : 'refuse-noauth';
    }
    if (verb === 'reset') return 'refuse-switch';
    if (verb === 'quit') return 'forward';
    if (!authenticated) return 'refuse-noauth';
    // With no subcommand (or a large command's head ending before it) a denied command is refused whole.
    return deniedRedisCommand(verb, args.length > 1 ? word(args[1]) : undefined) ? 'refuse-command' : 'forward';
  }

  protected async handle(client: Socket): Promise<void> {
    client.pause();
    // Counted as it connects: each client connection holds an upstream one from the start.
    const { maxConnections } = this.options;
    if (!this.admit(client, maxConnections)) {
      client.end(
        `-ERR max number of clients reached: this deployment may hold at most ${maxConnections} Redis connections at once\r\n`,
      );
      return;
    }
    let upstream: Socket;
    try {
      upstream = await this.openUpstream(client);
      const reader = new SocketReader(upstream);
      upstream.write(encodeCommand(['AUTH', this.options.username, this.options.password]));
      const reply = await reader.line();
      if (reply !== '+OK') {
        client.end(
          `-ERR Slipway could not open this deployment's Redis user (${reply.replace(/^-/, '').slice(0, 120)})\r\n`,
        );
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
    let out: Buffer[] = [];
    const decide = (args: Buffer[], whole: boolean): boolean => {
      const verdict = this.verdict(args, authenticated, whole);
      if (verdict === 'authenticated') authenticated = true;
      if (verdict === 'refuse-switch') out.push(SWITCH_REFUSED);
      else if (verdict === 'refuse-noauth') out.push(NOAUTH);
      else if (verdict === 'refuse-command')
        out.push(COMMAND_REFUSED.get(word(args[0]) as (typeof DENIED_REDIS_COMMANDS)[number])!);
      return verdict === 'forward' || verdict === 'authenticated';
    };
    const parser = new RespRequestParser({
      command: (args) => void (decide(args, true) && out.push(encodeCommand(args))),
      begin: (_count, head) => decide(head, false),
      bytes: (data) => void out.push(data),
    });
    const send = () => {
      if (!out.length) return;
      const batch = out;
      out = [];
      // Backpressure: a client faster than the server waits instead of filling the deployer.
      if (!upstream.write(batch.length === 1 ? batch[0]! : Buffer.concat(batch))) {
        client.pause();
        upstream.once('drain', () => client.resume());
      }
    };
    let broken = false;
    client.on('data', (chunk: Buffer) => {
      if (broken) return;
      try {
        parser.push(chunk);
      } catch (err) {
        // As the server does: the replies to what came before, then the error, then closed (QUIT
        // makes the server close once it has answered everything).
        broken = true;
        client.pause();
        if (!(err instanceof RespProtocolError)) this.options.onError?.(err as Error);
        const reason = err instanceof RespProtocolError ? err.message : 'unreadable request';
        out.push(
          encodeCommand([`SLIPWAY-FRONT:protocol-error:${reason.replace(/[^\w$']+/g, '-')}`]),
          encodeCommand(['QUIT']),
        );
      }
      send();
    });
    client.on('end', () => upstream.end());
    client.resume();
  }
}
