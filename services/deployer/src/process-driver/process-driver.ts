import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '@slipway/config';
import { edgeToken, isEdgeToken } from '@slipway/crypto';
import { DeploymentActivity, DeploymentRepository, EdgeRouteRepository, type DataSource } from '@slipway/db';
import type { Logger } from '@slipway/logging';
import { RevisionReads } from '@slipway/pipeline';
import {
  ContainerInstances,
  ProcessRuntime,
  type ImageCache,
  type Sandbox,
  type InstanceHealth,
  type InstanceRecord,
  type RuntimeDriver,
  type StartInstancesInput,
  type StartInstancesOptions,
  type StartInstancesOutcome,
  type TrafficSwitch,
} from '@slipway/runtime';
import type { WorkerMetrics } from '@slipway/worker';
import { AgentRunCountsReader } from '../metrics/agent-runs.js';
import { DeploymentMetrics } from '../metrics/deployment-metrics.js';
import { DeploymentWork } from './deployment-work.js';
import { DISCARD_GRACE_MS, DRAIN_MS, InstanceKeeper, type InstanceContext, type InstanceEvents } from './instances.js';
import { Rollout } from './rollout.js';
import { RuntimeLock } from './runtime-lock.js';
import { Supervision } from './supervision.js';
import { Tailers } from './tailers.js';
import type { ServingAuth } from '../serving-auth.js';
import { Traffic } from './traffic.js';

/** How often instances are supervised (and the runtime lock retried by a standby). */
const TICK_MS = 2_000;
/** `slipway_runtime_instance_events_total` on the deployer's `/metrics` (none without a registry). */
function instanceEvents(metrics: Pick<WorkerMetrics, 'counter'> | undefined): InstanceEvents {
  if (!metrics) return () => undefined;
  const counter = metrics.counter(
    'slipway_runtime_instance_events_total',
    'Process-runtime instance events: an instance judged unhealthy by its continuous health probe, or restarted, ' +
      'by reason (exited, out_of_memory, unhealthy, left_starting).',
    ['event', 'reason'],
  );
  return (event, reason) => counter.inc({ event, reason });
}

/**
 * The process runtime's driver inside a deployer (docs/architecture.md, Runtimes).
 *
 * SINGLE NODE: only the deployer holding the runtime lock acts (see RuntimeLock); the others park
 * cloud-hosted rollouts and teardowns until an owner takes them, so every deployer of an
 * installation must run on the same machine. The lock is per control-plane database: two
 * installations on one machine need disjoint port ranges.
 *
 * The owner keeps one serving proxy per deployment on its stable `serving_port` (Traffic), copies
 * instance output into deploy logs (Tailers), and every few seconds supervises (Supervision).
 * Releasing never stops instances: they outlive the deployer and the next owner adopts them.
 * `revision` gives a revision's input again for restarts and adoption.
 */
export class ProcessDriver implements RuntimeDriver<InstanceRecord> {
  readonly runtime: ProcessRuntime;
  private readonly lock: RuntimeLock;
  private readonly ctx: InstanceContext;
  private readonly keeper: InstanceKeeper;
  private readonly supervision: Supervision;
  /** Starts a revision's instances and waits for them (startInstances). */
  private readonly rollout: Rollout;
  private readonly containers: ContainerInstances | null;
  private readonly metrics: DeploymentMetrics;
  private readonly stopping = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | null = null;
  /** The agent-server run counters under each deployment's prefix, in the deployments' Redis database. */
  private readonly runCounts: AgentRunCountsReader;

  constructor(
    config: Readonly<Config>,
    dataSource: DataSource,
    private readonly log: Logger,
    revision: (revisionId: string) => Promise<StartInstancesInput>,
    sandbox: Sandbox | null,
    /** Who may call a deployment's serving URL. */
    servingAuth: ServingAuth,
    metrics?: Pick<WorkerMetrics, 'counter' | 'registry'>,
    /** Unpacked images (with the sandbox): image revisions run as containers. */
    private readonly images: ImageCache | null = null,
  ) {
    // runc's state under the data dir: containers outlive the deployer and the next one finds them.
    this.containers =
      sandbox && images ? new ContainerInstances(sandbox, path.join(config.dataDir, 'runtime', 'runc')) : null;
    this.runtime = new ProcessRuntime(dataSource, {
      ...config.runtime,
      dataDir: config.dataDir,
      sandbox,
      containers: this.containers,
      deployments: new DeploymentRepository(dataSource.manager),
    });
    // The edges send each deployment's requests to its serving proxy here (docs/operations.md, The edge).
    this.lock = new RuntimeLock(dataSource, log, () =>
      new EdgeRouteRepository(dataSource.manager).recordOwner(config.runtime.advertiseHost),
    );
    const metricsLog = log.child({ component: 'deployment-metrics' });
    this.runCounts = new AgentRunCountsReader(config.redisUrl, metricsLog);
    // Served requests and agent runs are the deployment's activity: they keep it from UNUSED
    // and bring it back (docs/api.md, Deployment status). Only the owner serves and reads runs.
    const activity = new DeploymentActivity(dataSource);
    const active = (deploymentId: string) => {
      activity
        .record(deploymentId)
        .catch((err) => log.warn({ err, deploymentId }, 'recording deployment activity failed'));
    };
    this.metrics = new DeploymentMetrics(
      dataSource,
      this.runtime,
      metricsLog,
      metrics?.registry,
      async (deploymentId) => {
        const counts = await this.runCounts.take(deploymentId);
        if (counts) active(deploymentId);
        return counts;
      },
    );
    const deploymentMetrics = this.metrics;
    const edgeTokens = [config.secretsKey.key, ...config.previousSecretsKeys].map(edgeToken);
    this.ctx = {
      dataSource,
      runtime: this.runtime,
      traffic: new Traffic(
        this.runtime,
        log,
        servingAuth,
        (deploymentId, outcome) => deploymentMetrics.request(deploymentId, outcome),
        active,
        (token) => isEdgeToken(token, edgeTokens),
      ),
      tailers: new Tailers(dataSource, Math.round(config.runtime.logFileMb * 1024 * 1024)),
      work: new DeploymentWork(),
      log,
      stopping: this.stopping.signal,
      events: instanceEvents(metrics),
      metrics: this.metrics,
    };
    this.keeper = new InstanceKeeper(this.ctx);
    this.supervision = new Supervision(this.ctx, this.keeper, revision);
    this.rollout = new Rollout(this.ctx, this.keeper, this.containers);
  }

  get isOwner(): boolean {
    return this.lock.held;
  }

  /** First pass (lock, adoption, proxies) before the deployer takes jobs; then every TICK_MS. */
  async adopt(): Promise<void> {
    // Namespaces of instances a stop left behind (their rows say exited).
    const reaped = await this.runtime.reapNetworks().catch((err) => {
      this.log.warn({ err }, 'reaping leftover sandbox networks failed');
      return [];
    });
    if (reaped.length) this.log.info({ reaped }, 'removed network namespaces of stopped instances');
    await this.pruneImages();
    await this.tick();
    this.timer = setInterval(() => void this.tick(), TICK_MS);
    this.timer.unref();
    this.metrics.start(() => this.lock.held);
  }

  async release(): Promise<void> {
    this.stopping.abort('The deployer is shutting down.');
    clearInterval(this.timer);
    await this.ticking;
    await this.metrics.stop().catch((err) => this.log.warn({ err }, 'writing the last deployment metrics failed'));
    await this.runCounts.close();
    await this.relinquish();
    // Restarts and retirements in progress get a moment; the next owner finishes the rest.
    await this.ctx.work.settle(2_000);
    await this.lock.release();
  }

  /**
   * Starts the revision's instances and waits until each answers its health probe. On any
   * failure every new instance is stopped again, the old ones never notice, and the message
   * quotes the end of the failed instance's log (secrets masked).
   */
  async startInstances(
    input: StartInstancesInput,
    options: StartInstancesOptions,
  ): Promise<StartInstancesOutcome<InstanceRecord>> {
    const { deploymentId, revisionId } = input;
    const { work } = this.ctx;
    this.keeper.rollingOut.add(revisionId);
    let outcome: StartInstancesOutcome<InstanceRecord> | undefined;
    try {
      // Leftovers of an earlier attempt at this very revision (its deployer died) go first.
      await work.serialize(deploymentId, async () => {
        const leftovers = (await this.runtime.store.live({ revisionId })).filter((r) => !this.keeper.busy.has(r.id));
        await Promise.all(leftovers.map((r) => this.keeper.stop(r, DISCARD_GRACE_MS)));
      });
      await this.ctx.traffic.ensureProxy(deploymentId);
      outcome = await this.rollout.launchAll(input, options);
      return outcome;
    } finally {
      if (!outcome?.ok) this.keeper.rollingOut.delete(revisionId);
    }
  }

  async switchTraffic(input: StartInstancesInput, instances: InstanceRecord[]): Promise<TrafficSwitch> {
    const { deploymentId, revisionId } = input;
    const { traffic, work } = this.ctx;
    const done = await work.hold(deploymentId);
    let before: Map<string, InstanceRecord>;
    try {
      await traffic.ensureProxy(deploymentId);
      // Queue workers run graphs and receive no traffic.
      before = traffic.replace(
        deploymentId,
        instances.filter((i) => i.role === 'api'),
      );
    } catch (err) {
      done();
      throw err;
    }
    let settled = false;
    const settle = async (work: () => Promise<void>) => {
      if (settled) return;
      settled = true;
      try {
        await work();
      } finally {
        this.keeper.rollingOut.delete(revisionId);
        done();
      }
    };
    return {
      confirm: () =>
        settle(async () => {
          const old = await this.runtime.store.markOthersStopping(deploymentId, revisionId);
          for (const r of old) this.keeper.retire(r, DRAIN_MS);
        }),
      revert: () =>
        settle(async () => {
          traffic.replace(deploymentId, before.values());
          await this.keeper.discard(instances);
        }),
    };
  }

  async stop(target: { instances: InstanceRecord[] } | { deploymentId: string }): Promise<void> {
    if ('instances' in target) {
      for (const i of target.instances) this.keeper.rollingOut.delete(i.revisionId);
      await this.keeper.discard(target.instances);
      return;
    }
    await this.teardown(target.deploymentId);
  }

  async health(deploymentId: string): Promise<InstanceHealth[]> {
    const live = await this.runtime.store.live({ deploymentId });
    return live.map((r) => ({
      id: r.id,
      revisionId: r.revisionId,
      role: r.role,
      index: r.index,
      healthy: r.role === 'queue' ? this.supervision.watching(r.id) : this.ctx.traffic.has(deploymentId, r.id),
    }));
  }

  // ---------------------------------------------------------------- pieces

  /** Teardown of a deployment: its proxy and every instance, before its database goes. */
  private async teardown(deploymentId: string): Promise<void> {
    this.keeper.tearingDown.add(deploymentId);
    await this.ctx.work.serialize(deploymentId, async () => {
      await this.ctx.traffic.close(deploymentId);
      const live = await this.runtime.store.live({ deploymentId });
      await Promise.all(live.map((r) => this.keeper.stop(r, 5_000)));
      // Its log files and HOME; the deploy logs in Postgres go with the deployment row.
      await rm(this.runtime.deploymentDir(deploymentId), { recursive: true, force: true });
    });
    await this.pruneImages();
  }

  /** Removes unpacked images no revision of a remaining deployment runs and no container uses. */
  private async pruneImages(): Promise<void> {
    if (!this.images || !this.containers) return;
    try {
      const keep = await new RevisionReads(this.ctx.dataSource.manager).imageDigestsInUse();
      for (const digest of await this.containers.digestsInUse(this.images.dir)) keep.add(digest);
      const removed = await this.images.prune(keep);
      if (removed.length) this.log.info({ removed }, 'removed unpacked images no revision uses');
    } catch (err) {
      this.log.warn({ err }, 'pruning unpacked images failed');
    }
  }

  private tick(): Promise<void> {
    if (this.ticking) return this.ticking;
    if (this.stopping.signal.aborted) return Promise.resolve();
    this.ticking = (async () => {
      try {
        if (await this.lock.hold(() => this.relinquish())) await this.supervision.pass();
      } catch (err) {
        this.log.warn({ err }, 'runtime supervision pass failed');
      } finally {
        this.ticking = null;
      }
    })();
    return this.ticking;
  }

  /** Stops serving, following and relaying DNS (never the instances): for shutdown or a lost lock. */
  private async relinquish(): Promise<void> {
    await this.ctx.traffic.closeAll();
    await this.ctx.tailers.stopAll();
    await this.runtime.releaseNetworks();
  }
}
