import { appendFile } from 'node:fs/promises';
import { ProcessRuntimeRepository, type DataSource } from '@slipway/db';
import type { Logger } from '@slipway/logging';
import { instanceLabel, type InstanceRecord, type ProcessRuntime, type StartInstancesInput } from '@slipway/runtime';
import type { DeploymentMetrics } from '../metrics/deployment-metrics.js';
import type { DeploymentWork } from './deployment-work.js';
import { launchSpec } from './launch-spec.js';
import type { Tailers } from './tailers.js';
import type { Traffic } from './traffic.js';

/** Old instances keep their connections this long after the switch, then get SIGTERM… */
export const DRAIN_MS = 2_000;
/** …and SIGKILL of their process group this long after that. */
const STOP_GRACE_MS = 10_000;
/** New instances nobody uses yet (failed rollout) are stopped faster. */
export const DISCARD_GRACE_MS = 2_000;
/** A restarted instance gets this long to answer its health probe. */
const RESTART_HEALTH_MS = 120_000;

/** Why an instance is restarted (a `/metrics` label, so a small fixed set). */
export type RestartKind = 'exited' | 'out_of_memory' | 'unhealthy' | 'left_starting';

/** Counts instance events for `/metrics` (`slipway_runtime_instance_events_total`). */
export type InstanceEvents = (event: 'unhealthy' | 'restarted', reason: RestartKind) => void;

/** An instance that went this long without a restart starts its backoff over. */
const BACKOFF_RESET_MS = 5 * 60_000;
/** The longest wait between two restarts of one instance. */
const BACKOFF_MAX_MS = 60_000;

/** What a process driver's instance work shares. */
export interface InstanceContext {
  dataSource: DataSource;
  runtime: ProcessRuntime;
  traffic: Traffic;
  tailers: Tailers;
  work: DeploymentWork;
  log: Logger;
  /** Aborted when the driver is released. */
  stopping: AbortSignal;
  events: InstanceEvents;
  /** Per-deployment metrics: restarts and health probes are told here. */
  metrics: DeploymentMetrics;
}

/**
 * Restarts, retirements and stops of single instances, with what they need to remember: which
 * instances are being worked on (`busy`), which revisions a rollout is starting, which
 * deployments are being torn down, and each failing instance's restart backoff.
 */
export class InstanceKeeper {
  readonly busy = new Set<string>();
  readonly rollingOut = new Set<string>();
  readonly tearingDown = new Set<string>();
  /** Per instance: restarts in a row (reset after BACKOFF_RESET_MS without one) and when the next may start. */
  private readonly backoff = new Map<string, { restarts: number; at: number; notBefore: number }>();

  constructor(private readonly ctx: InstanceContext) {}

  /**
   * Stops an instance now (SIGTERM, SIGKILL after `graceMs`), its tailer and its log files; the
   * row ends `exited`.
   */
  async stop(row: InstanceRecord, graceMs: number): Promise<void> {
    this.backoff.delete(row.id);
    await this.ctx.runtime.stop(row, graceMs);
    await this.ctx.tailers.discard(row);
  }

  /** Stops instances a rollout started but will not use (failure, lost commit, error). */
  async discard(instances: InstanceRecord[]): Promise<void> {
    await Promise.all(instances.map((i) => this.stop(i, DISCARD_GRACE_MS)));
  }

  /** Stops an instance after `drainMs`, in the background. */
  retire(row: InstanceRecord, drainMs: number): void {
    if (this.busy.has(row.id)) return;
    this.busy.add(row.id);
    this.ctx.work.track(async () => {
      try {
        if (drainMs) await new Promise((r) => setTimeout(r, drainMs));
        await this.stop(row, STOP_GRACE_MS);
        this.ctx.log.info({ deploymentId: row.deploymentId, instanceId: row.id, pid: row.pid }, 'instance stopped');
      } catch (err) {
        this.ctx.log.warn({ err, instanceId: row.id }, 'stopping an instance failed');
      } finally {
        this.busy.delete(row.id);
      }
    });
  }

  /**
   * Relaunches an instance in the background: what is left of its group is stopped (a dead npm
   * may leave the server holding the port), the restart is marked in its log (so in the deploy
   * log too), and it gets traffic again once it answers its health probe. Repeated restarts back
   * off (2 s, 4 s, … up to a minute apart), whether or not the restarted process got healthy:
   * an app that answers and then runs out of memory again is a crash loop too.
   */
  restart(row: InstanceRecord, input: StartInstancesInput, reason: string, kind: RestartKind): void {
    let why = reason;
    let counted = kind;
    const backoff = this.backoff.get(row.id);
    if (backoff && backoff.notBefore > Date.now()) return;
    const { runtime, tailers, log } = this.ctx;
    this.busy.add(row.id);
    this.ctx.traffic.remove(row.deploymentId, row.id);
    this.ctx.work.track(async () => {
      try {
        await runtime.kill(row, 1_000);
        // An instance that died may have been the OOM killer's; a live one that stopped answering
        // is restarted for that, whatever a child of it met earlier.
        const cause = kind === 'unhealthy' ? null : await runtime.exitCause(row, input.limits);
        if (cause) {
          why = `was killed: ${cause}`;
          counted = 'out_of_memory';
        }
        this.ctx.events('restarted', counted);
        this.ctx.metrics.restarted(row, counted);
        await appendFile(
          row.logPath,
          `--- slipway: ${instanceLabel(row)} (pid ${row.pid ?? 'unknown'}) ${why}; restarting ---\n`,
        ).catch(() => undefined);
        log.warn({ deploymentId: row.deploymentId, instanceId: row.id, pid: row.pid, why }, 'restarting an instance');
        const { record } = await runtime.launch({ ...launchSpec(input, row.role), index: row.index, existing: row });
        await tailers.ensure(record, input.secretValues);
        const { healthy } = await runtime.waitHealthy(record, Date.now() + RESTART_HEALTH_MS, this.ctx.stopping);
        if (!healthy) {
          await runtime.kill(record, 1_000);
          // Still meant to run: `running` with no live pid is retried on a later tick.
          await runtime.store.update(record.id, 'running', { pid: null });
          return;
        }
        await runtime.store.update(record.id, 'running');
        await this.ctx.work.serialize(row.deploymentId, async () => {
          // Moved on meanwhile: the next tick retires it like any leftover.
          if (
            (await this.activeRevision(row.deploymentId)) !== row.revisionId ||
            this.tearingDown.has(row.deploymentId)
          )
            return;
          // A queue worker takes runs from the queue by itself.
          if (record.role === 'api') this.ctx.traffic.add({ ...record, status: 'running' });
        });
      } catch (err) {
        log.warn({ err, instanceId: row.id }, 'restarting an instance failed');
      } finally {
        const now = Date.now();
        const restarts = (backoff && now - backoff.at < BACKOFF_RESET_MS ? backoff.restarts : 0) + 1;
        this.backoff.set(row.id, {
          restarts,
          at: now,
          notBefore: now + Math.min(BACKOFF_MAX_MS, 1_000 * 2 ** restarts),
        });
        this.busy.delete(row.id);
      }
    });
  }

  private activeRevision(deploymentId: string): Promise<string | null> {
    return new ProcessRuntimeRepository(this.ctx.dataSource.manager).activeRevisionOf(deploymentId);
  }
}
