import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ServerLifecycle, serveWithin } from '@slipway/net';
import { arrivedVia } from './edge-client.js';
import { forwardRequest } from './forward-request.js';
import { forwardUpgrade, refuseUpgrade } from './forward-upgrade.js';
import {
  answerDenial,
  forwardHeaders,
  REQUEST_RECEIVE_MS,
  refuseTarget,
  type AccessDenial,
  type ProxyTarget,
} from './forwarding.js';
import { UpstreamPool } from './upstream-pool.js';

export type { AccessDenial, ProxyTarget };

export interface ServingProxyOptions {
  host: string;
  port: number;
  /** Warnings (upstream errors); the proxy never logs request contents. */
  onError?: (err: Error, target: ProxyTarget | null) => void;
  /**
   * Told of a failure of the proxy's own handling that its error boundary answered (400 or 502):
   * a bug to fix, never a reason to stop serving every other request.
   */
  onFault?: (err: Error) => void;
  /**
   * Decides whether a request may reach the instances, before anything is forwarded: null lets
   * it through (with the headers it left on `req.headers`: only those are forwarded, upgrades
   * included), a denial is answered by the proxy itself. Called for every request of a
   * keep-alive connection and for every Upgrade. A check that throws denies (503).
   */
  authorize?: (req: IncomingMessage) => Promise<AccessDenial | null>;
  /**
   * Told of every plain HTTP request once its answer is complete or the client left: the status
   * sent (the proxy's own denials and 502/503 included; 499 when the client left before an
   * answer) and how long it took from arrival. Upgrades (WebSockets) are not requests here.
   */
  onRequest?: (outcome: RequestOutcome) => void;
  /**
   * Whether a request's `x-slipway-edge` value is the edge's token: such a request names its
   * client's address and scheme (forwarding.ts, `arrivedVia`). Unset: no request is trusted so.
   */
  trustsEdge?: (token: string | undefined) => boolean;
  /** How long a client may take to send a whole request (REQUEST_RECEIVE_MS); answers are not bounded. */
  requestTimeoutMs?: number;
}

/** One request as the proxy saw it (for per-deployment metrics). */
export interface RequestOutcome {
  status: number;
  durationMs: number;
}

/**
 * The stable address of one cloud-hosted deployment (its `serving_port`): a reverse proxy that
 * spreads requests round robin over the deployment's healthy instances, applying the
 * deployment's serving rules (`authorize`) to each. The edge forwards here.
 *
 * A rollout switches traffic with `setTargets`, which swaps the whole list at once (UpstreamPool);
 * old instances are stopped only after a drain period (the caller's job), and a bodyless request
 * that loses its connection before any byte is retried once elsewhere, so a switch fails no request.
 */
export class ServingProxy {
  private readonly pool = new UpstreamPool();
  private readonly server: Server;
  private readonly lifecycle: ServerLifecycle;
  private readonly onError: (err: Error, target: ProxyTarget | null) => void;

  constructor(private readonly options: ServingProxyOptions) {
    this.onError = options.onError ?? (() => undefined);
    // Every handler runs inside the boundary: a request it cannot handle is answered, never fatal.
    // 0: no limit, as Node takes it.
    const requestTimeout = options.requestTimeoutMs ?? REQUEST_RECEIVE_MS;
    const within = (nodeDefault: number) => (requestTimeout > 0 ? Math.min(nodeDefault, requestTimeout) : nodeDefault);
    const server = createServer({
      requestTimeout,
      // Node's defaults, within a shorter requestTimeout (a request's head arrives within its whole);
      // it looks for requests past their time every connectionsCheckingInterval.
      headersTimeout: within(60_000),
      connectionsCheckingInterval: within(30_000),
    });
    this.server = serveWithin(server, {
      request: (req, res) => this.serve(req, res),
      upgrade: (req, socket, head) => this.serveUpgrade(req, socket, head),
      onError: (err) => this.options.onFault?.(err),
      failureStatus: 502,
    });
    this.lifecycle = new ServerLifecycle(this.server, options.host, options.port);
  }

  /** The port it listens on (the bound one when created with port 0). */
  get port(): number {
    return this.lifecycle.port;
  }

  get currentTargets(): readonly ProxyTarget[] {
    return this.pool.current;
  }

  listen(): Promise<void> {
    return this.lifecycle.listen();
  }

  /** Replaces the target list atomically. */
  setTargets(targets: readonly ProxyTarget[]): void {
    this.pool.setTargets(targets);
  }

  /** Stops listening and closes client connections (in-flight requests get a short grace). */
  async close(graceMs = 1_000): Promise<void> {
    await this.lifecycle.close(graceMs);
    this.pool.destroy();
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.options.onRequest) this.measure(res, this.options.onRequest);
    const via = arrivedVia(req, this.options.trustsEdge);
    const denial = refuseTarget(req) ?? (await this.admit(req));
    if (denial) return answerDenial(req, res, denial);
    forwardRequest(req, res, this.pool, forwardHeaders(req.headers, via), this.onError);
  }

  private async serveUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const via = arrivedVia(req, this.options.trustsEdge);
    const denial = refuseTarget(req) ?? (await this.admit(req));
    if (denial) refuseUpgrade(req, socket, denial);
    else forwardUpgrade(req, socket as Socket, head, this.pool, forwardHeaders(req.headers, via), this.onError);
  }

  private measure(res: ServerResponse, report: (outcome: RequestOutcome) => void): void {
    const started = performance.now();
    res.once('close', () => {
      const status = res.headersSent ? res.statusCode : 499;
      report({ status, durationMs: performance.now() - started });
    });
  }

  private async admit(req: IncomingMessage): Promise<AccessDenial | null> {
    if (!this.options.authorize) return null;
    try {
      return await this.options.authorize(req);
    } catch (err) {
      this.onError(err as Error, null);
      return {
        status: 503,
        detail: 'The request could not be authorized right now; try again.',
        headers: { 'retry-after': '1' },
      };
    }
  }
}
