import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { isIngestCredential } from '@slipway/crypto';
import { AppError } from '@slipway/domain';
import { listenExclusive, serveWithin } from '@slipway/net';
import { ingestEndpointOf, otlpEncodingOf, TraceIntake, type IngestSlots } from '@slipway/tracing';

/** Where the langsmith client sends (its `LANGSMITH_ENDPOINT` ends with it), as on the api. */
const PREFIX = '/api/v1';
/** A request whose headers or body take longer than this is cut: a slow client holds no slot for long. */
const REQUEST_TIMEOUT_MS = 60_000;
/**
 * Open connections one deployment may hold to its trace front; more are closed on arrival, so
 * an app cannot spend the deployer's file descriptors, which every tenant shares. The langsmith
 * client keeps a few keep-alive connections.
 */
export const TRACE_FRONT_MAX_CONNECTIONS = 32;

export interface TraceFrontOptions {
  host: string;
  /** 0: any free port. */
  port: number;
  deploymentId: string;
  /** The deployment's workspace and tracing project, read when first needed (null: gone, or no project). */
  target: () => Promise<{ workspaceId: string; projectId: string } | null>;
  intake: TraceIntake;
  /** The secrets key and the rotated-out ones: the credential is checked under each. */
  secretsKeys: readonly Buffer[];
  /** Ingest requests written at once, per deployment; past it, 429 with Retry-After (shared by every front of the process). */
  slots: IngestSlots;
  /** Answered in `GET /api/v1/info`. */
  version: string;
  onError: (err: Error) => void;
}

/**
 * A deployment's trace front (docs/tracing.md, Tracing a deployment): the `LANGSMITH_ENDPOINT`
 * its instances are given, on the sandbox network's services address beside its Postgres and
 * Redis fronts, where only this deployment's sandboxes may connect. It serves the LangSmith
 * ingest endpoints only (`GET /info`, runs multipart, batch, create, update, OTLP traces) through
 * the api's own intake (TraceIntake), and writes every run into the deployment's tracing project
 * whatever project it names: the key it takes is the deployment's trace-ingest credential, which
 * opens nothing else anywhere. Reads and anything else are 404; a flood gets 429 once the
 * deployment's `slots` are taken, so one deployment's traces never hold up another's.
 */
export class TraceFront {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private target: Promise<{ workspaceId: string; projectId: string } | null> | null = null;

  constructor(private readonly options: TraceFrontOptions) {
    this.server = serveWithin(
      createServer({ requestTimeout: REQUEST_TIMEOUT_MS, headersTimeout: REQUEST_TIMEOUT_MS / 2 }),
      {
        request: (req, res) => this.handle(req, res),
        onError: (err) => options.onError(err),
      },
    );
    this.server.maxConnections = TRACE_FRONT_MAX_CONNECTIONS;
    this.server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  /** The port it listens on (after `listen`; the asked-for one before). */
  get port(): number {
    const address = this.server.address();
    return typeof address === 'object' && address ? address.port : this.options.port;
  }

  listen(): Promise<void> {
    return listenExclusive(this.server, this.options.host, this.options.port);
  }

  /** Stops listening and cuts every connection. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0]!;
    if (path !== PREFIX && !path.startsWith(`${PREFIX}/`))
      return refuse(res, 404, 'Not found: this is a trace front; it takes LangSmith run ingest under /api/v1 only.');
    const rest = path.slice(PREFIX.length);
    if (req.method === 'GET' && rest === '/info') return answer(res, 200, TraceIntake.info(this.options.version));
    let route: ReturnType<typeof ingestEndpointOf>;
    try {
      route = ingestEndpointOf(req.method ?? '', rest);
    } catch {
      return refuse(res, 400, 'The run id in the path is not valid.');
    }
    if (!route)
      return refuse(
        res,
        404,
        'Not found: a trace front takes run ingest only (runs multipart, batch, create, update, OTLP traces).',
      );
    const key = req.headers['x-api-key'];
    if (typeof key !== 'string' || !isIngestCredential(key, this.options.secretsKeys, this.options.deploymentId)) {
      return refuse(
        res,
        401,
        "Invalid or missing trace-ingest key in 'X-Api-Key': use the LANGSMITH_API_KEY this deployment's instances are given.",
      );
    }
    const target = await this.targetOf();
    if (!target) return refuse(res, 404, 'This deployment has no tracing project.');
    try {
      await this.options.slots.run(this.options.deploymentId, () =>
        this.options.intake.receive(
          route.endpoint,
          { workspaceId: target.workspaceId, boundTo: target.projectId },
          req.headers,
          req,
          route.runId,
        ),
      );
    } catch (err) {
      if (err instanceof AppError) {
        return refuse(
          res,
          err.status,
          err.message,
          err.retryAfterSeconds != null ? { 'retry-after': String(err.retryAfterSeconds) } : {},
        );
      }
      throw err;
    }
    if (route.endpoint !== 'otlp') return answer(res, 202, {});
    // An OTLP client reads the answer in the encoding it sent: an empty protobuf message is zero bytes.
    if (otlpEncodingOf(req.headers) === 'protobuf')
      return void res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': '0' }).end();
    return answer(res, 200, { partialSuccess: {} });
  }

  private targetOf() {
    this.target ??= this.options.target().then((t) => {
      if (!t) this.target = null;
      return t;
    });
    return this.target;
  }
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

/**
 * A refusal with the contract's `{detail}` body. The request body may still be arriving: the
 * connection closes after the answer, so nothing unread is taken for the next request.
 */
function refuse(res: ServerResponse, status: number, detail: string, headers: Record<string, string> = {}): void {
  const text = JSON.stringify({ detail });
  res
    .writeHead(status, {
      ...headers,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      connection: 'close',
    })
    .end(text);
}
