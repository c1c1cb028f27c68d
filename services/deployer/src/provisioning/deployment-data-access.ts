import type { Redis } from 'ioredis';
import type { Config } from '@slipway/config';
import { ingestCredential, type SecretsCodec } from '@slipway/crypto';
import {
  DEPLOYMENT_TEMPLATE_DATABASE,
  DeploymentActivity,
  DeploymentCredentialStore,
  DeploymentRepository,
  ProcessRuntimeRepository,
  provisionDeploymentDatabase,
  type DataSource,
  type FrontKind,
} from '@slipway/db';
import { deploymentDatabaseName } from '@slipway/domain';
import { workerConnection } from '@slipway/jobs';
import type { Logger } from '@slipway/logging';
import {
  activeFronts,
  deploymentKeyspaceUrl,
  deploymentRedisUser,
  dropDeploymentRedisUser,
  ensureDeploymentRedisUser,
  PostgresFront,
  probeLocalTrust,
  RedisFront,
  removeDeploymentRedisKeys,
  TcpRelay,
  type LocalTrustReport,
  type LoopbackFront,
  type Upstream,
} from '@slipway/runtime';
import { IngestSlots, TRACE_ACTIVITY_FAILED, TraceIntake } from '@slipway/tracing';
import { TraceFront } from './trace-front.js';

/** Unsandboxed, fronts listen on loopback only: they are for this machine's apps. */
const LOOPBACK = '127.0.0.1';
/** What a trace front's `GET /api/v1/info` says it is. */
const TRACE_FRONT_VERSION = '0.1.0';
/** How often the runtime owner checks that every running deployment has its fronts. */
const KEEP_FRONTS_MS = 2_000;
/** Trace batches of one deployment written at once by its trace front; past it, 429 (docs/operations.md, Per-tenant bounds). */
export const TRACE_FRONT_MAX_IN_FLIGHT = 4;

/** What an instance gets to reach its stores and its trace front, and the local ports it needs for that. */
export interface DataEnvironment {
  env: { DATABASE_URI: string; REDIS_URI: string; REDIS_PREFIX: string };
  /** Its trace front's `/api/v1` (LANGSMITH_ENDPOINT) and the deployment's trace-ingest credential (LANGSMITH_API_KEY). */
  tracing: { endpoint: string; apiKey: string };
  /** Ports of its fronts: what its sandboxed instances may connect to on the host. */
  frontPorts: number[];
}

/**
 * Per store: a gate (passwordless store), a plain relay (sandboxed, store demands passwords), or
 * none; and the deployment's trace front, always.
 */
interface Fronts {
  postgres: PostgresFront | TcpRelay | null;
  redis: RedisFront | TcpRelay | null;
  trace: TraceFront | null;
}

/** What every front is to its keeper: something that listens on a port and closes. */
type Front = Pick<LoopbackFront, 'listen' | 'close' | 'port'>;

function upstreamOf(url: string, defaultPort: number): Upstream {
  const u = new URL(url);
  return { host: u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1', port: Number(u.port) || defaultPort };
}

/**
 * A cloud-hosted deployment's access to Postgres and Redis (docs/architecture.md, Runtimes):
 * its own database role and Redis ACL user, with passwords generated once and kept sealed
 * (DeploymentCredentialStore), and — where the servers let local clients in without a password
 * (`trust`, an open `default` user) — a front per store on a recorded port that lets only that
 * role and user through. With the sandbox, instances live in network namespaces that reach no
 * store: every store gets a front (a plain relay where the store demands passwords itself) on
 * the sandbox network's services address (`frontHost`); unsandboxed, fronts listen on loopback.
 * Beside them, each deployment's trace front (TraceFront), where its instances send their traces.
 * Probes the servers at every start and says what it found.
 */
export class DeploymentDataAccess {
  private trust: LocalTrustReport = { postgresPasswordless: null, redisDefaultOpen: null };
  private readonly fronts = new Map<string, Promise<Fronts>>();
  private redisConnection: Redis | null = null;
  private keeper: NodeJS.Timeout | undefined;
  private keeping: Promise<void> | null = null;
  private warnedCatalog = false;

  /** Where fronts listen. */
  private readonly frontHost: string;
  /** What every trace front writes through: the api's own intake. */
  private readonly traceIntake: TraceIntake;
  /** Each deployment's trace-ingest slots. */
  private readonly traceSlots = new IngestSlots(TRACE_FRONT_MAX_IN_FLIGHT);

  constructor(
    private readonly config: Readonly<Config>,
    private readonly dataSource: DataSource,
    /** Opens and seals the deployments' store passwords (DeploymentCredentialStore). */
    private readonly box: SecretsCodec,
    private readonly log: Logger,
    /** The sandbox's network (fronts for every store, on its services address), or null. */
    private readonly sandboxNetwork: { servicesAddress: string } | null = null,
  ) {
    this.frontHost = sandboxNetwork?.servicesAddress ?? LOOPBACK;
    const activity = new DeploymentActivity(dataSource);
    // A trace is activity of its deployment (UNUSED); the runs are written whatever that write does.
    this.traceIntake = new TraceIntake(dataSource, undefined, (ids) =>
      activity.recordAll(ids, (err, deploymentId) => log.warn({ err, deploymentId }, TRACE_ACTIVITY_FAILED)),
    );
  }

  /** Probes the servers and reports (every start): a passwordless store is a warning. */
  async start(): Promise<LocalTrustReport> {
    this.trust = await probeLocalTrust(this.config.databaseUrl, this.config.redisUrl);
    const fronts = this.frontsActive;
    const report = { ...this.trust, postgresFront: fronts.postgres, redisFront: fronts.redis };
    if (this.trust.postgresPasswordless !== false || this.trust.redisDefaultOpen !== false) {
      this.log.warn(
        report,
        'local Postgres or Redis lets clients in without a password: ' +
          'any local process can become their superuser or default user; ' +
          "apps reach them only through Slipway's fronts, which stop nothing that bypasses them " +
          "(confine apps' network access)",
      );
    } else {
      this.log.info(
        report,
        'local Postgres and Redis demand passwords; apps connect to them directly with their own role and user',
      );
    }
    return this.trust;
  }

  /** Which fronts run (see activeFronts). */
  get frontsActive(): { postgres: boolean; redis: boolean } {
    return activeFronts(this.trust);
  }

  private credentials(deploymentId: string) {
    return new DeploymentCredentialStore(this.dataSource.manager, this.box).credentials(deploymentId);
  }

  /** On the deployments' keyspace (DEPLOYMENT_REDIS_DB), where teardown removes their keys; ACLs are server-wide. */
  private get redis(): Redis {
    this.redisConnection ??= workerConnection(deploymentKeyspaceUrl(this.config.redisUrl), this.log);
    return this.redisConnection;
  }

  /**
   * The deployment's database and role, and its Redis ACL user. Idempotent, and run again before
   * every rollout: that resets both to the sealed passwords (deployments older than the sealed
   * credentials, a Redis restarted without persistence). Throws DataAccessError when Redis has no ACLs.
   */
  async provision(deploymentId: string, databaseName: string): Promise<void> {
    const { databasePassword, redisPassword } = await this.credentials(deploymentId);
    const { catalogHidden } = await provisionDeploymentDatabase(
      this.config.databaseUrl,
      databaseName,
      databasePassword,
      {
        connectionLimit: this.config.deploymentDbConnectionLimit,
      },
    );
    if (!catalogHidden && !this.warnedCatalog) {
      this.warnedCatalog = true;
      this.log.warn(
        { template: DEPLOYMENT_TEMPLATE_DATABASE },
        "deployment databases list the server's other databases and roles: " +
          'the control-plane role is not a superuser and no hardened template database exists ' +
          '(docs/operations.md, Deployment databases)',
      );
    }
    await ensureDeploymentRedisUser(this.redis, deploymentId, redisPassword);
  }

  /** DATABASE_URI, REDIS_URI and REDIS_PREFIX of the deployment, after provisioning and opening its fronts. */
  async environment(deploymentId: string, databaseName: string): Promise<DataEnvironment> {
    await this.provision(deploymentId, databaseName);
    const { databasePassword, redisPassword } = await this.credentials(deploymentId);
    const fronts = await this.ensureFronts(deploymentId, databaseName);
    const user = deploymentRedisUser(deploymentId);

    let database: URL;
    if (fronts.postgres) {
      database = new URL(`postgres://${this.frontHost}:${fronts.postgres.port}`);
    } else {
      database = new URL(this.config.databaseUrl);
    }
    database.username = encodeURIComponent(databaseName);
    database.password = encodeURIComponent(databasePassword);
    database.pathname = `/${databaseName}`;

    // No database in it: the user may not SELECT, and its keys live in DEPLOYMENT_REDIS_DB (0) either way.
    const redis = fronts.redis
      ? new URL(`redis://${this.frontHost}:${fronts.redis.port}`)
      : new URL(this.config.redisUrl);
    redis.pathname = '';
    redis.searchParams.delete('db');
    redis.username = encodeURIComponent(user);
    redis.password = encodeURIComponent(redisPassword);

    const trace = fronts.trace!;
    const frontPorts = [fronts.postgres?.port, fronts.redis?.port, trace.port].filter(
      (p): p is number => p !== undefined,
    );
    return {
      env: { DATABASE_URI: database.toString(), REDIS_URI: redis.toString(), REDIS_PREFIX: user },
      tracing: {
        endpoint: `http://${this.frontHost}:${trace.port}/api/v1`,
        apiKey: ingestCredential(this.config.secretsKey.key, deploymentId),
      },
      frontPorts,
    };
  }

  /**
   * The deployment's fronts, listening on their recorded ports (the first time: any free port,
   * then recorded), so instances adopted after a deployer restart find them where they were.
   */
  ensureFronts(deploymentId: string, databaseName?: string): Promise<Fronts> {
    let found = this.fronts.get(deploymentId);
    if (!found) {
      found = this.openFronts(deploymentId, databaseName);
      this.fronts.set(deploymentId, found);
      found.catch(() => this.fronts.delete(deploymentId));
    }
    return found;
  }

  private async openFronts(deploymentId: string, databaseName?: string): Promise<Fronts> {
    const active = this.frontsActive;
    const relay = this.sandboxNetwork !== null;
    const store = new DeploymentCredentialStore(this.dataSource.manager, this.box);
    const name = databaseName ?? (await this.databaseName(deploymentId));
    const { databasePassword, redisPassword } = await store.credentials(deploymentId);
    const recorded = await store.frontPorts(deploymentId);
    const onError = (err: Error) => this.log.warn({ err, deploymentId }, 'data-access front: a connection failed');

    const open = async <F extends Front>(kind: FrontKind, make: (port: number) => F): Promise<F> => {
      let front = make(recorded[kind] ?? 0);
      try {
        await front.listen();
      } catch (err) {
        throw new Error(
          `The ${kind} front of deployment ${deploymentId} cannot listen on its recorded port ${recorded[kind]}: ${(err as Error).message}`,
        );
      }
      if (recorded[kind] === null) {
        const claimed = await store.claimFrontPort(deploymentId, kind, front.port);
        if (claimed !== front.port) {
          // Another deployer recorded one first; that is the port instances were given.
          await front.close();
          front = make(claimed);
          await front.listen();
        }
      }
      this.log.info({ deploymentId, port: front.port }, `${kind} front listening`);
      return front;
    };
    const fronts: Fronts = { postgres: null, redis: null, trace: null };
    const host = this.frontHost;
    const postgres = upstreamOf(this.config.databaseUrl, 5432);
    const redis = upstreamOf(this.config.redisUrl, 6379);
    try {
      if (active.postgres) {
        fronts.postgres = await open(
          'postgres',
          (port) =>
            new PostgresFront({
              host,
              port,
              upstream: postgres,
              role: name,
              database: name,
              password: databasePassword,
              maxConnections: this.config.deploymentDbConnectionLimit,
              onError,
            }),
        );
      } else if (relay) {
        fronts.postgres = await open('postgres', (port) => new TcpRelay({ host, port, upstream: postgres, onError }));
      }
      if (active.redis) {
        fronts.redis = await open(
          'redis',
          (port) =>
            new RedisFront({
              host,
              port,
              upstream: redis,
              username: deploymentRedisUser(deploymentId),
              password: redisPassword,
              maxConnections: this.config.deploymentRedisConnectionLimit,
              onError,
            }),
        );
      } else if (relay) {
        fronts.redis = await open('redis', (port) => new TcpRelay({ host, port, upstream: redis, onError }));
      }
      fronts.trace = await open('trace', (port) => this.traceFront(deploymentId, host, port));
    } catch (err) {
      await Promise.allSettled([fronts.postgres?.close(), fronts.redis?.close(), fronts.trace?.close()]);
      throw err;
    }
    return fronts;
  }

  private traceFront(deploymentId: string, host: string, port: number): TraceFront {
    return new TraceFront({
      host,
      port,
      deploymentId,
      target: async () => {
        const t = await new DeploymentRepository(this.dataSource.manager).tracingTarget(deploymentId);
        return t?.projectId ? { workspaceId: t.workspaceId, projectId: t.projectId } : null;
      },
      intake: this.traceIntake,
      secretsKeys: [this.config.secretsKey.key, ...this.config.previousSecretsKeys],
      slots: this.traceSlots,
      version: TRACE_FRONT_VERSION,
      onError: (err) => this.log.warn({ err, deploymentId }, 'trace front: a request failed'),
    });
  }

  private async databaseName(deploymentId: string): Promise<string> {
    const d = await new DeploymentRepository(this.dataSource.manager).databaseNaming(deploymentId);
    if (!d) throw new Error(`Deployment ${deploymentId} is gone.`);
    return d.databaseName ?? deploymentDatabaseName(d.name, deploymentId);
  }

  /**
   * While `isOwner()` (the process runtime's owner), every deployment with instances recorded as
   * live has its fronts open — after a deployer restart, adopted instances reconnect to the same
   * ports; when ownership is lost, they close so the next owner can take the ports.
   */
  keepFronts(isOwner: () => boolean): void {
    const pass = async () => {
      if (!isOwner()) return this.closeAll();
      for (const id of await new ProcessRuntimeRepository(this.dataSource.manager).withLiveInstances()) {
        await this.ensureFronts(id).catch((err) =>
          this.log.error({ err, deploymentId: id }, 'could not open the data-access fronts'),
        );
      }
    };
    const tick = () => {
      this.keeping ??= pass()
        .catch((err) => this.log.warn({ err }, 'keeping the data-access fronts failed'))
        .finally(() => (this.keeping = null));
    };
    tick();
    this.keeper = setInterval(tick, KEEP_FRONTS_MS);
    this.keeper.unref();
  }

  /** Closes the deployment's fronts (its connections go with them). */
  async closeFronts(deploymentId: string): Promise<void> {
    const fronts = await this.fronts.get(deploymentId)?.catch(() => null);
    this.fronts.delete(deploymentId);
    await Promise.allSettled([fronts?.postgres?.close(), fronts?.redis?.close(), fronts?.trace?.close()]);
  }

  /**
   * Teardown: fronts closed, Redis user dropped (its connections cut), then its keys removed (run
   * counters and all: nothing can write them any more); the database goes separately.
   */
  async drop(deploymentId: string): Promise<void> {
    await this.closeFronts(deploymentId);
    await dropDeploymentRedisUser(this.redis, deploymentId);
    await removeDeploymentRedisKeys(this.redis, deploymentId);
  }

  /** Closes every front (shutdown, lost runtime lock); the next owner opens them on the same ports. */
  async closeAll(): Promise<void> {
    await Promise.allSettled([...this.fronts.keys()].map((id) => this.closeFronts(id)));
  }

  async close(): Promise<void> {
    clearInterval(this.keeper);
    await this.keeping;
    await this.closeAll();
    await this.redisConnection?.quit().catch(() => undefined);
    this.redisConnection = null;
  }
}
