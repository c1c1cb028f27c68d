import { createServer, type Server } from 'node:http';
import express, { type Express } from 'express';
import helmet from 'helmet';
import swaggerUi from 'swagger-ui-express';
import type { Redis } from 'ioredis';
import { ServingUrls, type Config } from '@slipway/config';
import { deriveKey, edgeToken, secretsCodec } from '@slipway/crypto';
import { DeploymentActivity, EVENTS_CHANNEL, PgNotifications, type DataSource } from '@slipway/db';
import { OUTBOX_CHANNEL, type Queues } from '@slipway/jobs';
import type { Logger } from '@slipway/logging';
import { serveWithin } from '@slipway/net';
import { BULL_BOARD_PATH, bullBoardApp } from './admin/bull-board.js';
import { ApiKeyCache, RateLimits } from '@slipway/access';
import { Authenticator } from './auth/authenticator.js';
import { JwtVerifier } from './auth/jwt-verifier.js';
import { CONSOLE_PATH, consoleApp, consoleEntrances } from './console/console-app.js';
import { accessLog } from './http/access-log.js';
import { Admission } from './http/admission.js';
import { errorHandler, notFoundHandler } from './http/errors.middleware.js';
import { TraceWriters } from './auth/trace-writers.js';
import { mountRoutes } from './http/mount.js';
import { StreamSlots } from './http/stream-slots.js';
import type { RouteSpec } from './http/route.js';
import { DependencyChecks } from './metrics/dependencies.js';
import { LocalTrustCheck } from './metrics/local-trust.js';
import { createMetrics } from './metrics/metrics.js';
import { buildOpenApiDocument } from './openapi/openapi.js';
import { apiKeyRoutes } from './routes/api-keys.router.js';
import { deploymentRoutes } from './routes/deployments.router.js';
import { integrationRoutes } from './routes/integrations.router.js';
import { listenerAgentRoutes } from './routes/listener-agent.router.js';
import { listenerRoutes } from './routes/listeners.router.js';
import { deploymentMetricsRoutes } from './routes/deployment-metrics.router.js';
import { deploymentTracesRoutes } from './routes/deployment-traces.router.js';
import { logRoutes } from './routes/logs.router.js';
import { eventRoutes } from './routes/events.router.js';
import { outboundWebhookRoutes } from './routes/outbound-webhooks.router.js';
import { revisionHistoryRoutes } from './routes/revision-history.router.js';
import { workspaceRoutes } from './routes/workspaces.router.js';
import { oauthProviderRoutes } from './routes/oauth-providers.router.js';
import { opsRoutes } from './routes/ops.router.js';
import { tagRoutes } from './routes/tags.router.js';
import { domainRoutes } from './routes/domains.router.js';
import { previewRoutes } from './routes/previews.router.js';
import { agentGatewayRoutes } from './routes/agent-gateway.router.js';
import { AgentGateway } from './services/agent-gateway.js';
import { tracingRoutes } from './routes/tracing.router.js';
import { uploadRoutes } from './routes/uploads.router.js';
import { registryRoutes } from './routes/registry.router.js';
import { ApiKeyService } from './services/api-key.service.js';
import { DeploymentService } from './services/deployment.service.js';
import { DomainClaims, DomainService } from './services/domain.service.js';
import { PreviewService } from './services/preview.service.js';
import { PullRequestPreviews } from './services/pull-request-previews.js';
import { IntegrationService } from './services/integration.service.js';
import { QuotaService } from './services/quota.service.js';
import { WebhookService } from './services/webhook.service.js';
import { WriteRunner } from './http/idempotency.js';
import { RevisionService } from './services/revision.service.js';
import { RevisionHistoryService } from './services/revision-history.service.js';
import { TagService } from './services/tag.service.js';
import { TracingService } from './services/tracing.service.js';
import { DeploymentTracesService } from './services/deployment-traces.service.js';
import { ListenerAgentService } from './services/listener-agent.service.js';
import { DesiredStateCache } from './services/desired-state-cache.js';
import { ListenerService } from './services/listener.service.js';
import { OAuthProviderService } from './services/oauth-provider.service.js';
import { DeploymentMetricsService } from './services/deployment-metrics.service.js';
import { LogService } from './services/log.service.js';
import { EventService } from './services/event.service.js';
import { OutboundWebhookService } from './services/outbound-webhook.service.js';
import { UploadService } from './services/upload.service.js';
import { RegistryService } from './services/registry.service.js';
import { REVISION_LOGS_CHANNEL, RevisionFlow } from '@slipway/pipeline';

export type { HandlerResult, RequestContext, RouteSpec } from './http/route.js';

export const API_VERSION = '0.1.0';
/** Self-hosted installs are reached as `<host>/api-host/v2/...` (docs/api.md, Conventions). */
export const PATH_PREFIXES = ['', '/api-host'] as const;

export interface AppDeps {
  config: Readonly<Config>;
  dataSource: DataSource;
  redis: Redis;
  /** Producer-side queues (fail-fast connection): Bull Board and queue metrics read them. */
  queues: Queues;
  logger: Logger;
  /**
   * The process's one LISTEN connection (`apiNotifications`): log and event followers wait on
   * it, and main.ts's outbox relay wakes on it. The caller closes it.
   */
  notifications: PgNotifications;
  /** Extra routes mounted like the built-ins, for extensions and tests. */
  extraRoutes?: RouteSpec[];
}

export interface App {
  express: Express;
  routes: readonly RouteSpec[];
  /** Ends open follow streams (event and log followers); the caller closes the connections. */
  close: () => Promise<void>;
}

/**
 * The api process's one LISTEN connection: log and event followers, and the outbox relay. It
 * connects on the first subscription (docs/architecture.md, Events): no I/O before that.
 */
/**
 * The api's HTTP server (not yet listening): the app behind the shared error boundary, so a
 * request no handler expected (CONNECT, one Node's parser refuses, a throw outside express's own
 * handling) is answered with a `{detail}` body and logged, never fatal.
 */
export function apiServer(app: App, logger: Logger): Server {
  return serveWithin(createServer(), {
    request: app.express,
    onError: (err) => logger.error({ err }, 'request failed outside its handler'),
    failureStatus: 500,
  });
}

export function apiNotifications(config: Readonly<Config>, logger: Logger): PgNotifications {
  return new PgNotifications(config.databaseUrl, [REVISION_LOGS_CHANNEL, EVENTS_CHANNEL, OUTBOX_CHANNEL], logger);
}

const UPLOAD_TOKEN_IN_URL = /(\/v2\/uploads\/)[^/?#]+/;

/** Builds the Express app. No I/O here: the caller owns connections and listening. */
export function createApp({
  config,
  dataSource,
  redis,
  queues,
  logger,
  notifications,
  extraRoutes = [],
}: AppDeps): App {
  const secrets = secretsCodec(config);
  const apiKeyCache = new ApiKeyCache(dataSource, config.apiKeyCacheTtlMs, logger);
  const authenticator = new Authenticator(dataSource, config.jwt ? new JwtVerifier(config.jwt) : null, apiKeyCache);

  const flow = new RevisionFlow(config.pipeline);
  const shutdown = new AbortController();
  const integrations = new IntegrationService(dataSource, secrets, config);
  const quotas = new QuotaService(dataSource, config.quotas, logger);
  const registry = new RegistryService(dataSource, config, quotas);
  const domainClaims = new DomainClaims(config);
  const deployments = new DeploymentService(
    dataSource,
    secrets,
    flow,
    integrations,
    quotas,
    config.ceilings,
    new ServingUrls(config),
    registry,
    config.sourceNames,
    domainClaims,
  );
  const revisions = new RevisionService(dataSource, deployments, flow);
  const previews = new PreviewService(dataSource, deployments, flow);
  const agentGateway = new AgentGateway(dataSource, {
    upstreamHost: config.edge.upstreamHost ?? null,
    fallbackHost: config.runtime.advertiseHost,
    edgeToken: edgeToken(config.secretsKey.key),
  });

  // Mounted sub-apps answer everything under their path, and are not JSON API routes.
  const metrics = createMetrics({
    dataSource,
    queues,
    logger,
    prefixes: PATH_PREFIXES,
    mounts: ['/docs', '/metrics', BULL_BOARD_PATH, CONSOLE_PATH],
  });
  const dependencies = new DependencyChecks(dataSource, redis, metrics.registry);

  let document: Record<string, unknown> | undefined;
  const routes: RouteSpec[] = [
    ...opsRoutes(
      {
        dependencies,
        localTrust: new LocalTrustCheck(config.databaseUrl, config.redisUrl),
        openApiDocument: () => (document ??= buildOpenApiDocument(routes, openApiInfo(config))),
      },
      logger,
    ),
    ...apiKeyRoutes(new ApiKeyService(dataSource, apiKeyCache)),
    ...listenerRoutes(new ListenerService(dataSource)),
    ...listenerAgentRoutes(
      new ListenerAgentService(
        dataSource,
        flow,
        secrets,
        new DesiredStateCache(deriveKey(config.secretsKey.key, 'desired-state-etag')),
        {
          apiUrl: config.publicUrl,
          secretsKey: config.secretsKey.key,
        },
      ),
    ),
    ...deploymentRoutes({
      deployments,
      revisions,
      writes: new WriteRunner(dataSource, deriveKey(config.secretsKey.key, 'idempotency-fingerprint')),
    }),
    ...oauthProviderRoutes(new OAuthProviderService(dataSource, secrets)),
    ...tagRoutes(new TagService(dataSource, deployments)),
    ...domainRoutes(new DomainService(dataSource, domainClaims)),
    ...previewRoutes(previews),
    ...agentGatewayRoutes(agentGateway),
    ...integrationRoutes({
      integrations,
      webhooks: new WebhookService(
        dataSource,
        integrations,
        deployments,
        Date.now,
        new PullRequestPreviews(dataSource, previews),
      ),
    }),
    ...uploadRoutes(new UploadService(dataSource, config, quotas)),
    ...registryRoutes(registry),
    ...logRoutes(new LogService(dataSource, notifications)),
    ...eventRoutes(new EventService(dataSource, notifications)),
    ...outboundWebhookRoutes(new OutboundWebhookService(dataSource, secrets, config)),
    ...revisionHistoryRoutes(new RevisionHistoryService(dataSource)),
    ...deploymentMetricsRoutes(new DeploymentMetricsService(dataSource)),
    ...workspaceRoutes(dataSource, quotas),
    ...tracingRoutes(
      new TracingService(dataSource, undefined, new DeploymentActivity(dataSource), logger),
      API_VERSION,
    ),
    ...deploymentTracesRoutes(new DeploymentTracesService(dataSource)),
    ...extraRoutes,
  ];

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);
  app.set('query parser', 'simple');

  app.use(metrics.httpMiddleware);
  app.use(securityHeaders());
  const limits = new RateLimits({
    settings: config.rateLimit,
    redis,
    keyPrefix: config.queuePrefix,
    log: logger,
    registry: metrics.registry,
  });
  const admission = new Admission(authenticator, limits);

  app.use(
    accessLog(logger, {
      // An upload URL's token is a credential (C10): logged as `<token>`.
      redactUrl: (url) => url.replace(UPLOAD_TOKEN_IN_URL, '$1<token>'),
      ignore: (url) => url === '/healthz' || url === '/readyz' || url === '/metrics',
    }),
  );
  // Byte-stream routes (tarball uploads, push webhooks) come before the JSON parser, which never sees them.
  const streamRouter = express.Router({ strict: false });
  const traceWriters = new TraceWriters(dataSource, [config.secretsKey.key, ...config.previousSecretsKeys], limits);
  mountRoutes(
    streamRouter,
    routes.filter((r) => r.streamBody),
    { admission, traceWriters },
  );
  for (const prefix of PATH_PREFIXES) app.use(prefix || '/', streamRouter);
  app.use(express.json({ limit: config.bodyLimitBytes, type: ['application/json', 'application/*+json'] }));

  const consoleRouter = consoleApp(admission.anonymousMiddleware());
  app.use(consoleEntrances(PATH_PREFIXES));
  const router = express.Router({ strict: false });
  const streams = new StreamSlots({
    redis,
    limit: config.sseStreamsPerKey,
    keyPrefix: config.queuePrefix,
    log: logger,
  });
  mountRoutes(
    router,
    routes.filter((r) => !r.streamBody),
    { admission, shutdown: shutdown.signal, streams },
  );
  for (const prefix of PATH_PREFIXES) {
    // serveFiles per mount: the shared `serve` keeps one init script for all setups.
    const docs = { swaggerOptions: { url: `${prefix}/openapi.json` }, customSiteTitle: 'Slipway API' };
    app.use(
      `${prefix}/docs`,
      admission.anonymousMiddleware(),
      swaggerUi.serveFiles(undefined, docs),
      swaggerUi.setup(undefined, docs),
    );
    app.use(`${prefix}/metrics`, admission.anonymousMiddleware(), metrics.router);
    app.use(`${prefix}${BULL_BOARD_PATH}`, bullBoardApp({ queues, admission, prefix }));
    app.use(`${prefix}${CONSOLE_PATH}`, consoleRouter);
    app.use(prefix || '/', router);
  }
  app.use(notFoundHandler(routes));
  app.use(errorHandler());
  return {
    express: app,
    routes,
    close: async () => {
      shutdown.abort();
      agentGateway.close();
    },
  };
}

/**
 * helmet's defaults on every response, stricter where this service allows it: no page of ours
 * (API reference, Bull Board) may be framed, so a click-jacking page cannot drive an admin's
 * board. `upgrade-insecure-requests` is left out: installs are often reached over plain HTTP
 * (loopback, a private network), where it would break the pages' own assets.
 */
function securityHeaders() {
  return helmet({
    contentSecurityPolicy: { directives: { frameAncestors: ["'none'"], upgradeInsecureRequests: null } },
    frameguard: { action: 'deny' },
  });
}

function openApiInfo(config: Readonly<Config>) {
  return {
    title: 'Slipway',
    version: API_VERSION,
    description: 'Deployment control plane for agent servers.',
    serverUrl: config.publicUrl,
  };
}
