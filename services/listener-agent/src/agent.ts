import type { AgentConfig } from '@slipway/config';
import type { Logger } from '@slipway/logging';
import { ControlPlaneClient, ControlPlaneUnavailable, type Report } from './control-plane.client.js';
import type { DeploymentReconciler, Outcome } from './deployment-reconciler.js';
import { MAX_LINES_PER_REPORT } from './pod-log-shipper.js';

/**
 * The delay before the next poll after `failures` failed ones in a row: the poll interval
 * doubled per failure up to the ceiling, with "equal jitter" (half fixed, half random) so a
 * fleet of agents does not return to a recovering control plane in lockstep.
 */
export function backoffDelay(
  failures: number,
  pollIntervalMs: number,
  maxBackoffMs: number,
  random = Math.random,
): number {
  if (failures <= 0) return pollIntervalMs;
  const ceiling = Math.min(maxBackoffMs, pollIntervalMs * 2 ** Math.min(failures, 30));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/**
 * How long one deployment's reconciliation may take. The Kubernetes client sets no deadline of
 * its own: without this, one hung API call would stop the loop, and with it the heartbeats.
 */
const RECONCILE_DEADLINE_MS = 120_000;

function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}

/**
 * The agent's loop: poll the desired state (the poll is also the heartbeat), reconcile each
 * deployment in the cluster, report back. While the control plane cannot be reached the agent
 * does nothing to the cluster (whatever runs keeps running) and retries with backoff; when it
 * is back, the next poll picks up where things stand, and objects already as desired are not
 * applied again.
 */
export class ListenerAgent {
  private stopped = false;
  private wake: (() => void) | undefined;
  private failures = 0;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly config: AgentConfig,
    private readonly controlPlane: ControlPlaneClient,
    private readonly reconciler: DeploymentReconciler,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.loop = this.run();
  }

  /** Finishes the poll in progress, then stops. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.pollOnce();
        if (this.failures) this.log.info({ failedPolls: this.failures }, 'control plane reachable again');
        this.failures = 0;
      } catch (err) {
        this.failures++;
        const level = err instanceof ControlPlaneUnavailable ? 'warn' : 'error';
        this.log[level](
          { err, failedPolls: this.failures },
          'poll failed; the cluster is left as it is until the next one',
        );
      }
      await this.sleep(backoffDelay(this.failures, this.config.pollIntervalMs, this.config.maxBackoffMs));
    }
  }

  /** One round: desired state → cluster → report. Exported for tests through the loop only. */
  private async pollOnce(): Promise<void> {
    const desired = await this.controlPlane.desiredState();
    this.reconciler.retain(
      new Set(desired.deployments.flatMap((d) => (d.action === 'apply' && d.revision_id ? [d.revision_id] : []))),
    );
    const outcomes: Outcome[] = [];
    for (const entry of desired.deployments) {
      if (this.stopped) break;
      try {
        outcomes.push(
          await withDeadline(
            this.reconciler.reconcile(entry),
            RECONCILE_DEADLINE_MS,
            `reconciling deployment ${entry.deployment_id}`,
          ),
        );
      } catch (err) {
        // The cluster failed us (an outage, a timeout): this deployment waits for the next poll.
        this.log.warn(
          { err, deploymentId: entry.deployment_id, action: entry.action },
          'could not reconcile a deployment; retrying on the next poll',
        );
      }
    }
    const report: Report = {
      revisions: outcomes.flatMap((o) => (o.revision ? [o.revision] : [])),
      deleted_deployments: outcomes.flatMap((o) => (o.deleted ? [o.deleted] : [])),
      logs: outcomes.flatMap((o) => o.logs).slice(0, MAX_LINES_PER_REPORT),
    };
    // Nothing to say is still worth a call: the desired-state poll already was the heartbeat.
    if (!report.revisions.length && !report.deleted_deployments.length && !report.logs.length) return;
    const result = await this.controlPlane.report(report);
    for (const o of outcomes) o.commit();
    for (const r of result.rejected) this.log.warn({ reason: r.reason }, 'the control plane rejected part of a report');
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
