import http from 'node:http';
import { DeploymentRepository, EdgeRouteRepository, type DataSource } from '@slipway/db';
import {
  AppError,
  BadGatewayError,
  ConflictError,
  ForbiddenError,
  GatewayTimeoutError,
  NotFoundError,
} from '@slipway/domain';
import { EDGE_CLIENT_HEADER, EDGE_TOKEN_HEADER } from '@slipway/runtime';

/** The LangGraph Server API paths the gateway forwards; anything else a deployment serves stays at its URL. */
const AGENT_PATHS = /^\/(assistants|threads|runs|store|crons|info)(\/|$)/;

export const AGENT_GATEWAY_LIMITS = {
  /** The longest call (a `runs/wait` included); past it, 504. */
  timeoutMs: 60_000,
  /** The largest answer passed on; past it, 502. */
  maxResponseBytes: 8 * 1024 * 1024,
};

/** One call of the caller's, to forward. */
export interface AgentCall {
  method: string;
  /** The agent API path (`/threads/search`), query string included. */
  path: string;
  body: unknown;
  /** The caller's own Slipway credential, as it authenticated to the api: the serving proxy checks it again. */
  apiKey: string | null;
  /** Sent as `Authorization` to a graph with its own auth handler (`X-Agent-Authorization`). */
  agentAuthorization: string | null;
  clientAddress: string | undefined;
  requestId: string;
}

/** What the agent answered: its status and JSON, nothing else of its headers. */
export interface AgentAnswer {
  status: number;
  json: string | undefined;
}

/**
 * The console's way to a deployed agent (docs/console.md, Agent): the signed-in caller's request,
 * forwarded to the deployment's serving proxy with the caller's own credential, so the serving
 * rules apply as at the deployment's URL (the key checked and stripped, budgets, lockout) and the
 * console never calls an app's origin. The app is treated as hostile: only LangGraph Server API
 * paths go to it, only a JSON answer of at most 8 MiB comes back (never its headers, so no cookie
 * or script reaches the console's origin), within 60 s. The client address travels under the
 * edge's token, so budgets count per client, not per api process.
 */
export class AgentGateway {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

  constructor(
    private readonly dataSource: DataSource,
    private readonly options: {
      /** `SLIPWAY_EDGE_UPSTREAM_HOST`: serving proxies are always reached here; null: at the runtime owner's address. */
      upstreamHost: string | null;
      /** Before any deployer announced itself. */
      fallbackHost: string;
      /** The edge's token (derived from the secrets key): the serving proxy then believes the client address passed. */
      edgeToken: string;
      limits?: typeof AGENT_GATEWAY_LIMITS;
    },
  ) {}

  async call(workspaceId: string, deploymentId: string, call: AgentCall): Promise<AgentAnswer> {
    if (!AGENT_PATHS.test(call.path))
      throw new NotFoundError(
        `${call.path.split('?')[0]} is not a path of the LangGraph Server API (assistants, threads, runs, store, crons, info).`,
      );
    if (!call.apiKey)
      throw new ForbiddenError("An agent's API is reached with an API key (X-Api-Key): sign in with one.");
    const deployment = await new DeploymentRepository(this.dataSource.manager).find(workspaceId, deploymentId);
    if (!deployment) throw NotFoundError.of('Deployment', deploymentId);
    if (deployment.listenerId)
      throw new ConflictError(`Deployment ${deploymentId} runs on a listener's cluster: call its agent at its URL.`);
    const routes = new EdgeRouteRepository(this.dataSource.manager);
    const route = await routes.one(deploymentId);
    if (!route?.servingPort) throw new ConflictError(`Deployment ${deploymentId} has no revision serving yet.`);
    const host = this.options.upstreamHost ?? (await routes.ownerAddress()) ?? this.options.fallbackHost;
    return this.forward(host, route.servingPort, call);
  }

  private forward(host: string, port: number, call: AgentCall): Promise<AgentAnswer> {
    const limits = this.options.limits ?? AGENT_GATEWAY_LIMITS;
    const body = call.body === undefined ? undefined : Buffer.from(JSON.stringify(call.body));
    const headers: http.OutgoingHttpHeaders = {
      accept: 'application/json',
      'x-api-key': call.apiKey!,
      'x-request-id': call.requestId,
      [EDGE_TOKEN_HEADER]: this.options.edgeToken,
      ...(call.clientAddress ? { [EDGE_CLIENT_HEADER]: call.clientAddress } : {}),
      ...(call.agentAuthorization ? { authorization: call.agentAuthorization } : {}),
      ...(body ? { 'content-type': 'application/json', 'content-length': body.length } : {}),
    };
    return new Promise<AgentAnswer>((resolve, reject) => {
      const req = http.request(
        { host, port, method: call.method, path: call.path, headers, agent: this.agent, timeout: limits.timeoutMs },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > limits.maxResponseBytes) {
              req.destroy();
              reject(new BadGatewayError(`The agent's answer is over ${limits.maxResponseBytes} bytes.`));
              return;
            }
            chunks.push(chunk);
          });
          res.on('error', (err) => reject(new BadGatewayError(`The agent's answer was cut: ${err.message}`)));
          res.on('end', () => {
            if (size > limits.maxResponseBytes) return;
            const text = Buffer.concat(chunks).toString('utf8');
            const type = String(res.headers['content-type'] ?? '');
            if (text && !/^application\/(.+\+)?json\b/i.test(type))
              return reject(new BadGatewayError(`The agent answered ${type || 'without a content type'}, not JSON.`));
            if (text) {
              try {
                JSON.parse(text);
              } catch {
                return reject(new BadGatewayError('The agent answered text that is not JSON.'));
              }
            }
            resolve({ status: res.statusCode ?? 502, json: text || undefined });
          });
        },
      );
      req.on('timeout', () =>
        req.destroy(new GatewayTimeoutError(`The agent did not answer within ${limits.timeoutMs / 1000} s.`)),
      );
      req.on('error', (err) =>
        reject(
          err instanceof AppError ? err : new BadGatewayError(`The deployment could not be reached: ${err.message}`),
        ),
      );
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
