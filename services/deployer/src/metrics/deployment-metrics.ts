import { DeploymentMetricsRepository, type DataSource, type MetricsBucket } from '@slipway/db';
import type { Logger } from '@slipway/logging';
import type { InstanceRecord, InstanceSample, ProcessRuntime, RequestOutcome } from '@slipway/runtime';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { RUN_DURATION_BOUNDS_MS, type AgentRunCounts } from './agent-runs.js';
import { BucketAccumulator } from './bucket.js';

/** The history's resolution: one row per deployment per this many milliseconds. */
export const BUCKET_MS = 10_000;
/** Finished buckets are written, and instances sampled, this often. */
const FLUSH_MS = 5_000;
/** Buckets are kept this long: the longest window (24 h) and some slack. */
export const RETENTION_MS = 25 * 60 * 60_000;
const PRUNE_EVERY_MS = 10 * 60_000;
/** Buckets a failing store leaves in memory are dropped past this age (the store was away for long). */
const KEEP_UNSTORED_MS = 5 * 60_000;

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Why an instance was restarted; `out_of_memory` counts as an OOM kill too. */
export type RestartReason = 'exited' | 'out_of_memory' | 'unhealthy' | 'left_starting';

const statusClass = (status: number) => `${Math.floor(status / 100)}xx`;

/** Reads and resets what a deployment's agent-server instances counted since the last read (agent-runs.ts). */
export type RunCountsReader = (deploymentId: string) => Promise<AgentRunCounts | null>;

/** The value a duration bucket's runs are observed at: its upper bound (the unbounded one: twice the last bound). */
const RUN_DURATION_VALUES_S = [
  ...RUN_DURATION_BOUNDS_MS,
  2 * RUN_DURATION_BOUNDS_MS[RUN_DURATION_BOUNDS_MS.length - 1]!,
].map((ms) => ms / 1000);

/**
 * Per-deployment runtime numbers of the cloud-hosted deployments this deployer serves
 * (docs/api.md, Metrics): requests, status classes and latency from the serving proxy, each
 * instance's CPU and memory from its cgroup, restarts and OOM kills from supervision, and the
 * runs of agent-server deployments as their instances count them (read with each sample).
 *
 * Exported on the deployer's `/metrics` with a `deployment` label, and kept as a short history:
 * every BUCKET_MS of a deployment becomes one `deployment_metrics` row once it is over (written
 * within FLUSH_MS after), pruned past RETENTION_MS. Each instance's latest sample and health
 * probe go on its `runtime_processes` row. Only the runtime's owner serves and samples, so a
 * bucket has one writer.
 */
export class DeploymentMetrics {
  private readonly buckets = new BucketAccumulator(BUCKET_MS);
  private readonly cpuBefore = new Map<string, { cpuNanos: number; at: bigint }>();
  private readonly probes = new Map<string, { healthy: boolean; at: Date }>();
  private readonly requests: Counter<'deployment' | 'status_class'>;
  private readonly latency: Histogram<'deployment'>;
  private readonly memory: Gauge<'deployment' | 'instance'>;
  private readonly cpu: Gauge<'deployment' | 'instance'>;
  private readonly restarts: Counter<'deployment' | 'reason'>;
  private readonly oomKills: Counter<'deployment'>;
  private readonly runsStarted: Counter<'deployment'>;
  private readonly runsEnded: Counter<'deployment' | 'outcome'>;
  private readonly runDuration: Histogram<'deployment'>;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | null = null;
  private prunedAt = 0;

  constructor(
    private readonly dataSource: DataSource,
    private readonly runtime: ProcessRuntime,
    private readonly log: Logger,
    registry?: Registry,
    private readonly runCounts: RunCountsReader = async () => null,
  ) {
    const registers = registry ? [registry] : [];
    this.requests = new Counter({
      name: 'slipway_deployment_requests_total',
      help: "Requests answered by a deployment's serving proxy, by deployment and status class (2xx … 5xx; 499: the client left first).",
      labelNames: ['deployment', 'status_class'],
      registers,
    });
    this.latency = new Histogram({
      name: 'slipway_deployment_request_duration_seconds',
      help: "Time from a request's arrival at the serving proxy to the end of its answer, by deployment.",
      labelNames: ['deployment'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.memory = new Gauge({
      name: 'slipway_deployment_instance_memory_bytes',
      help: "Memory charged to an instance's cgroup at the last sample, by deployment and instance.",
      labelNames: ['deployment', 'instance'],
      registers,
    });
    this.cpu = new Gauge({
      name: 'slipway_deployment_instance_cpu_percent',
      help: 'CPU an instance used between the last two samples, in percent of one core, by deployment and instance.',
      labelNames: ['deployment', 'instance'],
      registers,
    });
    this.restarts = new Counter({
      name: 'slipway_deployment_restarts_total',
      help: 'Instance restarts, by deployment and reason (exited, out_of_memory, unhealthy, left_starting).',
      labelNames: ['deployment', 'reason'],
      registers,
    });
    this.oomKills = new Counter({
      name: 'slipway_deployment_oom_kills_total',
      help: 'Instances the kernel killed for running out of their memory limit, by deployment.',
      labelNames: ['deployment'],
      registers,
    });
    this.runsStarted = new Counter({
      name: 'slipway_deployment_agent_runs_started_total',
      help: "Agent-server runs that began executing, by deployment (as the deployment's instances count them).",
      labelNames: ['deployment'],
      registers,
    });
    this.runsEnded = new Counter({
      name: 'slipway_deployment_agent_runs_total',
      help: 'Agent-server runs that ended, by deployment and outcome (success, error, interrupted, timeout).',
      labelNames: ['deployment', 'outcome'],
      registers,
    });
    this.runDuration = new Histogram({
      name: 'slipway_deployment_agent_run_duration_seconds',
      help:
        'Agent-server run durations from claim to final status, by deployment; ' +
        'the instances report bucket counts, so the sum is approximate ' +
        "(each run at its bucket's upper bound).",
      labelNames: ['deployment'],
      buckets: RUN_DURATION_BOUNDS_MS.map((ms) => ms / 1000),
      registers,
    });
  }

  /** Starts writing buckets and sampling instances (while `isOwner` says this process serves). */
  start(isOwner: () => boolean): void {
    this.timer = setInterval(() => void this.tick(isOwner), FLUSH_MS);
    this.timer.unref();
  }

  /** Stops the timer and writes every bucket, the current one included. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flushing;
    await this.flush(Number.POSITIVE_INFINITY);
  }

  /** One request answered by the deployment's serving proxy. */
  request(deploymentId: string, { status, durationMs }: RequestOutcome): void {
    this.requests.inc({ deployment: deploymentId, status_class: statusClass(status) });
    this.latency.observe({ deployment: deploymentId }, durationMs / 1000);
    this.buckets.request(deploymentId, status, durationMs);
  }

  /** An instance restarted by supervision; its row counts the restart. */
  restarted(instance: Pick<InstanceRecord, 'id' | 'deploymentId'>, reason: RestartReason): void {
    this.restarts.inc({ deployment: instance.deploymentId, reason });
    if (reason === 'out_of_memory') this.oomKills.inc({ deployment: instance.deploymentId });
    this.buckets.restart(instance.deploymentId, reason === 'out_of_memory');
    this.cpuBefore.delete(instance.id);
    void this.runtime.store
      .countRestart(instance.id)
      .catch((err) => this.log.warn({ err, instanceId: instance.id }, 'counting a restart failed'));
  }

  /** The answer of an instance's health probe (written with its next sample). */
  probed(instanceId: string, healthy: boolean): void {
    this.probes.set(instanceId, { healthy, at: new Date() });
  }

  private tick(isOwner: () => boolean): Promise<void> {
    if (this.flushing) return this.flushing;
    this.flushing = (async () => {
      try {
        if (isOwner()) await this.sample();
        await this.flush(Date.now());
        if (Date.now() - this.prunedAt > PRUNE_EVERY_MS) {
          this.prunedAt = Date.now();
          await new DeploymentMetricsRepository(this.dataSource.manager).prune(new Date(Date.now() - RETENTION_MS));
        }
      } catch (err) {
        this.log.warn({ err }, 'recording deployment metrics failed');
      } finally {
        this.flushing = null;
      }
    })();
    return this.flushing;
  }

  /** CPU and memory of every live instance; per deployment, their sums go in the current bucket. */
  private async sample(): Promise<void> {
    const live = await this.runtime.store.live();
    this.memory.reset();
    this.cpu.reset();
    const seen = new Set<string>();
    const samples = new Map<string, InstanceSample>();
    for (const row of live) {
      if (row.status !== 'running') continue;
      seen.add(row.id);
      const usage = await this.runtime.usage(row).catch(() => null);
      const at = process.hrtime.bigint();
      let cpuPercent: number | null = null;
      if (usage?.cpuNanos != null) {
        const before = this.cpuBefore.get(row.id);
        // A recreated cgroup (restart) counts from zero again: no figure for that interval.
        if (before && usage.cpuNanos >= before.cpuNanos)
          cpuPercent = (100 * (usage.cpuNanos - before.cpuNanos)) / Number(at - before.at);
        this.cpuBefore.set(row.id, { cpuNanos: usage.cpuNanos, at });
      }
      const memoryBytes = usage?.memoryBytes ?? null;
      const labels = { deployment: row.deploymentId, instance: row.id };
      if (memoryBytes !== null) this.memory.set(labels, memoryBytes);
      if (cpuPercent !== null) this.cpu.set(labels, cpuPercent);
      this.buckets.sample(row.deploymentId, row.id, { cpuPercent, memoryBytes });
      const probe = this.probes.get(row.id);
      this.probes.delete(row.id);
      samples.set(row.id, { memoryBytes, cpuPercent, healthy: probe?.healthy ?? null, checkedAt: probe?.at ?? null });
    }
    await this.runtime.store.recordSamples(samples);
    for (const id of this.cpuBefore.keys()) if (!seen.has(id)) this.cpuBefore.delete(id);
    // One read per deployment, all sent together on the one connection.
    await Promise.all(
      [...new Set(live.filter((r) => r.status === 'running').map((r) => r.deploymentId))].map((id) =>
        this.readRuns(id),
      ),
    );
  }

  /** A deployment's run counts since the last read; a failure loses nothing but that deployment's read. */
  private async readRuns(deploymentId: string): Promise<void> {
    const counts = await this.runCounts(deploymentId).catch((err) => {
      this.log.warn({ err, deploymentId }, 'reading agent-server run counts failed');
      return null;
    });
    if (!counts) return;
    this.buckets.runs(deploymentId, counts);
    if (counts.started) this.runsStarted.inc({ deployment: deploymentId }, counts.started);
    for (const [outcome, n] of Object.entries(counts.outcomes))
      if (n) this.runsEnded.inc({ deployment: deploymentId, outcome }, n);
    counts.durations.forEach((n, i) => {
      for (let k = 0; k < n; k++) this.runDuration.observe({ deployment: deploymentId }, RUN_DURATION_VALUES_S[i]!);
    });
  }

  /** Writes the buckets that ended before `now`; kept for the next try when the store fails. */
  private async flush(now: number): Promise<void> {
    const done: MetricsBucket[] = this.buckets.takeEnded(now);
    if (!done.length) return;
    try {
      await new DeploymentMetricsRepository(this.dataSource.manager).add(done);
    } catch (err) {
      const kept = done.filter((b) => Date.now() - b.bucketAt.getTime() < KEEP_UNSTORED_MS);
      this.buckets.putBack(kept);
      throw err;
    }
  }
}
