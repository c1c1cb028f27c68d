import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { SecureContextOptions } from 'node:tls';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '@slipway/logging';
import { ServerLifecycle, serveWithin } from '@slipway/net';
import {
  answerDenial,
  EDGE_CLIENT_HEADER,
  EDGE_TOKEN_HEADER,
  forwardHeaders,
  forwardRequest,
  forwardUpgrade,
  hostLines,
  refuseTarget,
  refuseUpgrade,
  REQUEST_RECEIVE_MS,
  type AccessDenial,
} from '@slipway/runtime';
import { clientReader, type Client } from './client-of.js';
import type { EdgeOutcome } from './edge-metrics.js';
import type { Destination, RouteTable } from './route-table.js';

/**
 * Request headers the edge states itself (or leaves out), whatever the client sent: the chain of
 * addresses and the scheme, and the other ways of naming them (`Forwarded`, `X-Real-IP`, a port
 * or a prefix) that an app could believe came from the edge.
 */
const EDGE_OMITS = [
  'x-forwarded-for',
  'x-forwarded-proto',
  'forwarded',
  'x-real-ip',
  'x-forwarded-port',
  'x-forwarded-prefix',
  EDGE_CLIENT_HEADER,
];

const NO_HOST: AccessDenial = { status: 400, detail: 'The request has no Host header.' };
/** Names nothing: an unknown host must not tell a prober which names exist elsewhere. */
const UNKNOWN_HOST: AccessDenial = { status: 404, detail: 'Not found.' };

export interface EdgeServerOptions {
  host: string;
  port: number;
  /** `<name>.<this>` is a deployment's host. */
  appsDomain: string;
  routes: RouteTable;
  /** The edge's token (x-slipway-edge), which lets a serving proxy take the client address the edge names. */
  token: string;
  log: Logger;
  /** This listener speaks TLS: the operator's certificate (the default) and/or an SNICallback choosing one per host. */
  tls?: SecureContextOptions;
  /**
   * A plain listener's requests for a host with a certificate in place are sent to HTTPS on this
   * port (308); `hasCertificate` says which hosts have one.
   */
  redirectToHttpsPort?: number;
  hasCertificate?: (host: string) => Promise<boolean>;
  /** `SLIPWAY_EDGE_TRUST_PROXY`: proxies in front of the edge whose forwarding headers are believed. */
  trustProxy?: boolean | number | string;
  /** Answers ACME HTTP-01 challenges of the hosts it routes (before any redirect); true when the request was one. */
  answerChallenge?: (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;
  /** Told what became of each request (EdgeMetrics). */
  count?: (outcome: EdgeOutcome) => void;
}

/**
 * One listener of the edge (its HTTP or its HTTPS port): routes each request
 * by its host to the deployment's serving proxy, which applies the serving rules (keys, budgets,
 * stripping, the traffic switch). Requests with no or several `Host` headers get 400, unknown
 * hosts 404, `CONNECT` 405 and a cut or malformed request its 400 from the boundary; none of them
 * can stop the edge.
 */
export class EdgeServer {
  private readonly server: Server;
  private readonly lifecycle: ServerLifecycle;
  private readonly suffix: string;
  private readonly scheme: 'http' | 'https';
  private readonly clientOf: (req: IncomingMessage) => Client;

  constructor(private readonly options: EdgeServerOptions) {
    this.suffix = `.${options.appsDomain}`;
    this.scheme = options.tls ? 'https' : 'http';
    this.clientOf = clientReader(options.trustProxy ?? false, this.scheme);
    // An https.Server is an http.Server as far as requests go (its 'request' and 'upgrade' events are the same).
    const server = options.tls ? (createTlsServer(options.tls) as unknown as Server) : createServer();
    this.server = serveWithin(server, {
      request: (req, res) => this.serve(req, res),
      upgrade: (req, socket, head) => this.serveUpgrade(req, socket, head),
      onError: (err) =>
        options.log.error({ err }, 'edge: a request failed in the edge itself (answered; kept serving)'),
      failureStatus: 502,
    });
    this.lifecycle = new ServerLifecycle(this.server, options.host, options.port);
    this.server.requestTimeout = REQUEST_RECEIVE_MS;
  }

  get port(): number {
    return this.lifecycle.port;
  }

  listen(): Promise<void> {
    return this.lifecycle.listen();
  }

  /** A new certificate for new connections (open ones keep theirs): a renewed file. */
  setCertificate(tls: SecureContextOptions): void {
    (this.server as unknown as { setSecureContext(o: SecureContextOptions): void }).setSecureContext(tls);
  }

  close(graceMs = 1_000): Promise<void> {
    return this.lifecycle.close(graceMs);
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const routed = this.route(req);
    if ('status' in routed) {
      this.count(refusal(routed));
      return answerDenial(req, res, routed);
    }
    // Only for a host the edge serves (a CA validates no other): a challenge is a read of Postgres.
    if (this.options.answerChallenge && (await this.options.answerChallenge(req, res)))
      return this.count('acme_challenge');
    if (await this.toHttps(req)) {
      this.count('redirected');
      return this.redirect(req, res);
    }
    this.count('forwarded');
    forwardRequest(req, res, routed.pool, this.headers(req), this.upstreamError(routed));
  }

  private async serveUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const routed = this.route(req);
    if ('status' in routed) {
      this.count(refusal(routed));
      return refuseUpgrade(req, socket, routed);
    }
    if (await this.toHttps(req)) {
      this.count('refused');
      return refuseUpgrade(req, socket, { status: 400, detail: 'This host is served over https.' });
    }
    this.count('forwarded');
    forwardUpgrade(req, socket as Socket, head, routed.pool, this.headers(req), this.upstreamError(routed));
  }

  private count(outcome: EdgeOutcome): void {
    this.options.count?.(outcome);
  }

  /**
   * A plain request for a host whose certificate is in place goes to HTTPS, unless a trusted proxy
   * in front says its client already used HTTPS (a redirect would come back the same way, forever).
   */
  private async toHttps(req: IncomingMessage): Promise<boolean> {
    if (this.options.redirectToHttpsPort === undefined || this.clientOf(req).proto === 'https') return false;
    const host = hostname(req.headers.host);
    return !!host && (!this.options.hasCertificate || (await this.options.hasCertificate(host)));
  }

  /** The destination of a request, or why it has none. An absolute-form target names the host itself (RFC 9112 §3.2.2). */
  private route(req: IncomingMessage): Destination | AccessDenial {
    if (hostLines(req) === 0 && !/^https?:\/\//i.test(req.url ?? '')) return NO_HOST;
    const absolute = absoluteHost(req.url);
    const denial = refuseTarget(req);
    if (denial) return denial;
    if (absolute) req.headers.host = absolute;
    const host = hostname(req.headers.host);
    if (!host) return UNKNOWN_HOST;
    return this.options.routes.destinationOf(host, this.suffix) ?? UNKNOWN_HOST;
  }

  /** 308 to the same host and path over HTTPS (the method and body are kept by the client). */
  private redirect(req: IncomingMessage, res: ServerResponse): void {
    const port = this.options.redirectToHttpsPort;
    const host = hostname(req.headers.host)!;
    const location = `https://${host}${port === 443 ? '' : `:${port}`}${req.url ?? '/'}`;
    const body = JSON.stringify({ detail: `Served over https: ${location}` });
    res
      .writeHead(308, { location, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
      .end(body);
    req.resume();
  }

  /** What the serving proxy gets: the forwarding headers, the client address and the edge's token (set here, whatever the client sent). */
  private headers(req: IncomingMessage) {
    const { address, proto, forwardedFor } = this.clientOf(req);
    return forwardHeaders(
      req.headers,
      { address: forwardedFor, proto },
      {
        // The chain so far is the edge's to state (clientReader): what a client sent in these headers is replaced.
        omit: EDGE_OMITS,
        set: {
          'x-forwarded-host': typeof req.headers.host === 'string' ? req.headers.host : undefined,
          [EDGE_TOKEN_HEADER]: this.options.token,
          [EDGE_CLIENT_HEADER]: address || undefined,
        },
      },
    );
  }

  private upstreamError(destination: Destination) {
    return (err: Error) => {
      this.count('upstream_error');
      this.options.log.warn(
        { err, deploymentId: destination.deploymentId },
        "edge: the deployment's serving proxy did not answer",
      );
    };
  }
}

/** The outcome a refusal counts as. */
function refusal(denial: AccessDenial): EdgeOutcome {
  if (denial === NO_HOST) return 'no_host';
  return denial === UNKNOWN_HOST ? 'unknown_host' : 'refused';
}

/** The host of an absolute-form target (`GET http://host/path`), else null. */
function absoluteHost(url: string | undefined): string | null {
  if (!url || !/^https?:\/\//i.test(url)) return null;
  try {
    return new URL(url).host || null;
  } catch {
    return null;
  }
}

/** The host a `Host` value names, lower case, without its port or a trailing dot; null when it is no host. */
export function hostname(value: string | undefined): string | null {
  if (!value) return null;
  const text = value.trim().toLowerCase();
  const host = text.startsWith('[') ? text.slice(0, text.indexOf(']') + 1) : text.replace(/:\d*$/, '');
  if (!host || host.length > 253) return null;
  return host.endsWith('.') ? host.slice(0, -1) : host;
}
