import type { PipelineTimings } from '@slipway/config';
import {
  DeploymentActivityRepository,
  DeploymentRepository,
  OutboundWebhookRepository,
  PreviewRepository,
  queryRows,
  transitionDeployment,
  type DataSource,
  type EntityManager,
} from '@slipway/db';
import type { Logger } from '@slipway/logging';
import { enqueueInOutbox, JOB_CATALOG, type Queues } from '@slipway/jobs';
import { beginDeploymentDelete } from './deployment-deletion.js';
import { deadlineFailure, phaseOf } from './phases.js';
import { RevisionReads, type OpenRevision } from './revision-reads.js';
import type { RevisionFlow } from './revision-flow.js';

/** A pending delivery unchanged this long has its job looked for. */
const WEBHOOK_QUIET_SECONDS = 120;

/** BullMQ states in which a job is still coming: a worker will pick it up. */
const PENDING_STATES = new Set(['waiting', 'delayed', 'prioritized', 'waiting-children']);

/** What a reconcile pass did, for logs and tests. */
export interface ReconcileReport {
  timedOut: string[];
  retried: string[];
  unknownListenerDeployments: string[];
  reprovisioned: string[];
  teardownsForced: string[];
  teardownsRequeued: string[];
  idled: string[];
  /** Previews past their `expires_at`, whose delete started. */
  previewsExpired: string[];
  /** Outbound webhook deliveries still pending whose job was gone, enqueued again. */
  webhookDeliveriesRequeued: string[];
}

/**
 * The safety net behind every worker (docs/architecture.md, Rules). A pass, run by any worker
 * process on the `maintenance` queue and safe to run concurrently (every change is a
 * conditional transition):
 * - fails revisions past their phase deadline, with a status_message saying which deadline;
 * - re-enqueues a phase whose job is gone or whose worker stopped heart-beating (a crashed or
 *   killed worker), up to `maxPhaseAttempts`, then fails it;
 * - turns the deployments (and rolling-out revisions) of a silent listener UNKNOWN;
 * - re-enqueues provisioning and teardown that lost their jobs, and finishes listener teardowns
 *   the listener never confirmed once the teardown deadline passes;
 * - re-enqueues outbound webhook deliveries still pending whose job is gone (Redis lost it);
 * - marks idle deployments UNUSED; purges old idempotency keys and webhook deliveries (the
 *   retention pass, retention.ts, removes the rest of what is old).
 */
export class Reconciler {
  constructor(
    private readonly dataSource: DataSource,
    private readonly queues: Queues,
    private readonly flow: RevisionFlow,
    private readonly timings: PipelineTimings,
    private readonly log: Logger,
  ) {}

  async run(): Promise<ReconcileReport> {
    const report: ReconcileReport = {
      timedOut: [],
      retried: [],
      unknownListenerDeployments: [],
      reprovisioned: [],
      teardownsForced: [],
      teardownsRequeued: [],
      idled: [],
      previewsExpired: [],
      webhookDeliveriesRequeued: [],
    };
    await this.revisions(report);
    await this.silentListeners(report);
    await this.deployments(report);
    await this.webhookDeliveries(report);
    await this.housekeeping();
    const changed = Object.entries(report).filter(([, ids]) => ids.length);
    if (changed.length) this.log.info({ reconciled: Object.fromEntries(changed) }, 'reconcile pass changed state');
    return report;
  }

  private tx<T>(work: (m: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  // ------------------------------------------------------------------ revisions

  private async revisions(report: ReconcileReport): Promise<void> {
    const open = await new RevisionReads(this.dataSource.manager).openStarted(1000);
    for (const rev of open) {
      if (rev.overdue) {
        if (await this.failOverdue(rev)) report.timedOut.push(rev.id);
      } else if (await this.phaseLost(rev)) {
        const applied = await this.tx((m) => this.flow.retryPhase(m, rev.id, this.lostReason(rev)));
        if (applied) report.retried.push(rev.id);
      }
    }
  }

  private async failOverdue(rev: OpenRevision): Promise<boolean> {
    const { to, message } = deadlineFailure(rev.status, this.timings);
    const applied = await this.tx((m) => this.flow.transition(m, rev.id, to, { message }));
    if (applied) this.log.warn({ revisionId: rev.id, from: rev.status, to }, 'revision passed its deadline');
    return !!applied;
  }

  /**
   * True when nobody is working on the revision's current phase any more: its job is gone,
   * failed or finished while the revision still waits, or its worker stopped heart-beating.
   * A DEPLOYING external_container revision waits for its listener, not for a job: only its
   * deadline (or the listener-silence rule) ends it.
   */
  private async phaseLost(rev: OpenRevision): Promise<boolean> {
    if (rev.status === 'CREATING' || rev.status === 'QUEUED' || rev.status === 'UNKNOWN') return false; // deadline-driven
    if (rev.status === 'DEPLOYING' && rev.source === 'external_container') return false;
    const stale = Date.now() - this.timings.heartbeatStaleMs;
    const lastSign = Number(rev.last_sign_ms);
    if (lastSign > stale) return false;
    const name = phaseOf(rev.status)?.job;
    if (name !== 'build.revision' && name !== 'rollout.revision') return false;
    const jobId = JOB_CATALOG[name].jobId({ revisionId: rev.id, attempt: rev.attempt });
    const job = await this.queues[JOB_CATALOG[name].queue].getJob(jobId);
    const state = job ? await job.getState() : 'missing';
    if (PENDING_STATES.has(state)) return false;
    // Workers refresh heartbeat_at while they work: an active job gone quiet lost its worker.
    // Quiet counts from when the job went active too, so a worker that just picked it up and
    // has not written its first heartbeat yet is not taken for dead.
    if (state === 'active') return Math.max(lastSign, job?.processedOn ?? 0) < stale;
    // Why it ended, for the operator (the revision's message stays the phase's own: an error's
    // text is the worker's, not the user's).
    this.log.warn(
      { revisionId: rev.id, status: rev.status, attempt: rev.attempt, job: state, failedReason: job?.failedReason },
      "a revision's job ended while the revision still waits on it",
    );
    return true;
  }

  private lostReason(rev: OpenRevision): string {
    return phaseOf(rev.status)?.lostMessage ?? 'The worker on this revision stopped responding.';
  }

  // ------------------------------------------------------------------ listeners

  /** A listener silent past its period: its deployments become UNKNOWN, rollouts waiting on it too. */
  private async silentListeners(report: ReconcileReport): Promise<void> {
    const silent = await queryRows<{ id: string }>(
      this.dataSource.manager,
      `SELECT d.id FROM deployments d JOIN listeners l ON l.id = d.listener_id
        WHERE d.status IN ('READY', 'AWAITING_DATABASE', 'UNUSED')
          AND coalesce(l.last_seen_at, d.created_at) < now() - $1 * interval '1 millisecond'`,
      [this.timings.listenerSilenceMs],
    );
    for (const { id } of silent) {
      await this.tx(async (m) => {
        if (!(await transitionDeployment(m, id, 'UNKNOWN'))) return;
        report.unknownListenerDeployments.push(id);
        for (const revisionId of await new RevisionReads(m).deployingOf(id)) {
          await this.flow.transition(m, revisionId, 'UNKNOWN', {
            message: 'The listener stopped reporting; waiting for it to come back.',
          });
        }
      });
    }
  }

  // ------------------------------------------------------------------ deployments

  private async deployments(report: ReconcileReport): Promise<void> {
    // AWAITING_DATABASE with its name recorded is a listener's deployment whose first rollout has
    // not begun (that makes it READY): it has no provision.deployment job to lose.
    const stale = this.timings.heartbeatStaleMs;
    const waiting = await queryRows<{ id: string; status: string; listener_id: string | null; overdue: boolean }>(
      this.dataSource.manager,
      `SELECT id, status, listener_id,
              (status = 'AWAITING_DELETE' AND status_changed_at < now() - $2 * interval '1 millisecond') AS overdue
         FROM deployments
        WHERE (status = 'AWAITING_DELETE' OR (status = 'AWAITING_DATABASE' AND database_name IS NULL))
          AND status_changed_at < now() - $1 * interval '1 millisecond'
        LIMIT 1000`,
      [stale, this.timings.teardownDeadlineMs],
    );
    for (const d of waiting) {
      if (d.status === 'AWAITING_DELETE' && d.listener_id) {
        // Only the listener can confirm its cluster is clean; past the deadline we stop waiting.
        if (d.overdue) {
          await this.tx((m) => new DeploymentRepository(m).removeDeleted(d.id));
          this.log.warn(
            { deploymentId: d.id, listenerId: d.listener_id },
            'listener never confirmed teardown; deployment removed',
          );
          report.teardownsForced.push(d.id);
        }
        continue;
      }
      const name = d.status === 'AWAITING_DELETE' ? 'teardown.deployment' : 'provision.deployment';
      if (await this.requeueIfLost(name, d.id)) {
        (name === 'teardown.deployment' ? report.teardownsRequeued : report.reprovisioned).push(d.id);
      }
    }

    // Previews past their expiry go as any delete does, said `expired` in their event; checked
    // again under the row lock, so a rollout that extended one meanwhile keeps it.
    for (const id of await new PreviewRepository(this.dataSource.manager).expired()) {
      const ended = await this.tx(
        async (m) =>
          (await new PreviewRepository(m).lockIfExpired(id)) &&
          (await beginDeploymentDelete(m, this.flow, id, { previewReason: 'expired' })),
      );
      if (ended) report.previewsExpired.push(id);
    }

    // Idle: no redeploy and no activity (DeploymentActivity) for the period. Re-checked under
    // the row lock, so a request arriving between the list and the change is not lost.
    const idleAfterMs = this.timings.idleAfterMs;
    for (const id of await new DeploymentActivityRepository(this.dataSource.manager).idle(idleAfterMs)) {
      if (await this.tx((m) => new DeploymentActivityRepository(m).markUnused(id, idleAfterMs))) report.idled.push(id);
    }
  }

  /** Re-enqueues a deployment job whose job is gone or failed; a pending or running one is left alone. */
  private async requeueIfLost(
    name: 'provision.deployment' | 'teardown.deployment',
    deploymentId: string,
  ): Promise<boolean> {
    const entry = JOB_CATALOG[name];
    const job = await this.queues[entry.queue].getJob(entry.jobId({ deploymentId }));
    const state = job ? await job.getState() : 'missing';
    if (PENDING_STATES.has(state) || state === 'active') return false;
    if (job && state === 'failed') {
      await job.retry('failed');
      return true;
    }
    // 'completed' yet still waiting, or missing: the deterministic id would dedupe, so drop it first.
    if (job) await job.remove();
    await this.tx((m) => enqueueInOutbox(m, name, { deploymentId }));
    return true;
  }

  /**
   * A pending delivery whose job is gone (Redis lost its data) would wait forever, and could not
   * be redelivered. Its job id is deterministic, so adding it again is a no-op while the job
   * exists; only deliveries quiet for a while are looked at, so a fresh one still in the outbox
   * is left to the relay.
   */
  private async webhookDeliveries(report: ReconcileReport): Promise<void> {
    const quiet = await new OutboundWebhookRepository(this.dataSource.manager).quietPending(WEBHOOK_QUIET_SECONDS, 200);
    const entry = JOB_CATALOG['deliver.webhook'];
    for (const d of quiet) {
      const payload = { deliveryId: d.id, round: d.round };
      const jobId = entry.jobId(payload);
      if (await this.queues.webhooks.getJob(jobId)) continue;
      await this.queues.webhooks.add('deliver.webhook', payload, { ...entry.options, jobId });
      report.webhookDeliveriesRequeued.push(d.id);
    }
  }

  private async housekeeping(): Promise<void> {
    await this.dataSource.query(`DELETE FROM idempotency_keys WHERE created_at < now() - interval '24 hours'`);
    // Deliveries are recorded before they are authenticated, so anyone can add rows: keep
    // unsigned ones a day (enough to debug a misconfigured secret), signed ones 30 days.
    await this.dataSource.query(
      `DELETE FROM webhook_deliveries
        WHERE received_at < now() - CASE WHEN signature_valid THEN interval '30 days' ELSE interval '1 day' END`,
    );
  }
}
