import { redactValues } from '@slipway/logging';
import {
  ArtifactError,
  containerStartFailure,
  instanceLabel,
  lastLines,
  type ContainerInstances,
  type HealthOutcome,
  type InstanceRecord,
  type ProcessRuntime,
  type StartInstancesInput,
  type StartInstancesOptions,
  type StartInstancesOutcome,
} from '@slipway/runtime';
import type { InstanceContext, InstanceKeeper } from './instances.js';
import { launchSpec } from './launch-spec.js';

/** Lines of a failed instance's log quoted in the failure message. */
const FAILURE_LOG_LINES = 10;
/** Lines of a failed instance's log searched for a start failure line. */
const START_FAILURE_SEARCH_LINES = 200;
/**
 * The line the agent server host (services/agent-server/src/server.ts) prints when a graph throws
 * as it is imported at start: the message leads with it, it says what to fix.
 */
const START_FAILURE = /^Graph '[^']*' \(.*\) failed to load at start: /;

/**
 * One rollout's start of a revision's instances (ProcessDriver.startInstances): every API instance
 * and queue worker launched, then all of them waited for at once. The first to fail ends the wait
 * for the rest, every new instance is stopped again, and the failure says why in the words of
 * the failed instance's log, secrets masked.
 */
export class Rollout {
  constructor(
    private readonly ctx: InstanceContext,
    private readonly keeper: InstanceKeeper,
    /** The embedded container runtime (with the sandbox and images): an image's USER gives way to its uid. */
    private readonly containers: ContainerInstances | null,
  ) {}

  /** Launches the revision's instances and waits for their health probes; a failure stops them all again. */
  async launchAll(
    input: StartInstancesInput,
    { signal, deadline, log }: StartInstancesOptions,
  ): Promise<StartInstancesOutcome<InstanceRecord>> {
    const { deploymentId, revisionId } = input;
    const stopAll = new AbortController();
    const onAbort = () => stopAll.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const launched: InstanceRecord[] = [];
    try {
      // API instances, then (a revision with queue workers) the workers: the revision is not
      // deployed until every one of them answers its health probe.
      const slots = [
        ...Array.from({ length: input.scale }, (_, index) => ({ role: 'api' as const, index })),
        ...Array.from({ length: input.queue?.scale ?? 0 }, (_, index) => ({ role: 'queue' as const, index })),
      ];
      // The image's USER is not honoured (a root USER would be root in the sandbox): said once per rollout.
      const imageUser = input.image?.config.user;
      if (imageUser && this.containers) {
        log(
          `The image's USER ${imageUser} is ignored: ` +
            `its containers run as the deployment's uid ${await this.containers.uidOf(deploymentId)}.`,
        );
      }
      for (const { role, index } of slots) {
        if (signal.aborted) break;
        if (this.keeper.tearingDown.has(deploymentId)) throw new Error('The deployment is being deleted.');
        const { record } = await this.ctx.runtime.launch({ ...launchSpec(input, role), index, log });
        launched.push(record);
        await this.ctx.tailers.ensure(record, input.secretValues);
      }
      const ports = (role: string) =>
        launched
          .filter((r) => r.role === role)
          .map((r) => r.port)
          .join(', ');
      const workers = input.queue ? ` and ${input.queue.scale} queue worker(s) (ports ${ports('queue')})` : '';
      log(
        `Started ${input.scale} instance(s) of ${input.artifactRef} (ports ${ports('api')})${workers}; waiting for GET /ok.`,
      );
      // One instance failing ends the wait for all of them.
      const outcomes = await Promise.all(
        launched.map(async (record) => {
          const outcome = await this.ctx.runtime.waitHealthy(record, deadline, stopAll.signal);
          if (!outcome.healthy) stopAll.abort('A sibling instance failed.');
          return outcome;
        }),
      );
      const failedAt = signal.aborted ? -1 : outcomes.findIndex((o) => !o.healthy);
      if (signal.aborted || failedAt >= 0 || launched.length < slots.length) {
        const outcome: HealthOutcome = failedAt >= 0 ? outcomes[failedAt]! : { healthy: false, reason: 'aborted' };
        // The log is read before the stop, which would add the siblings' shutdown noise.
        const message = await failureMessage(this.ctx.runtime, input, launched[Math.max(0, failedAt)], outcome, signal);
        await this.keeper.discard(launched);
        return { ok: false, message };
      }
      for (const record of launched) {
        record.status = 'running';
        await this.ctx.runtime.store.update(record.id, 'running');
      }
      log(
        `All ${input.scale} instance(s)${input.queue ? ` and ${input.queue.scale} queue worker(s)` : ''} answer their health probe.`,
      );
      return { ok: true, instances: launched };
    } catch (err) {
      await this.keeper.discard(launched);
      // An instance that can never start (an image whose command cannot be executed) fails the
      // rollout now; anything else throws, and the reconciler retries the phase.
      if (err instanceof ArtifactError) return { ok: false, message: redactValues(err.message, input.secretValues) };
      throw err;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }
}

/** Why a rollout failed: which instance and how, its log's last lines, a start failure line first. */
async function failureMessage(
  runtime: ProcessRuntime,
  input: StartInstancesInput,
  failed: InstanceRecord | undefined,
  outcome: HealthOutcome,
  signal: AbortSignal,
): Promise<string> {
  const label = failed ? instanceLabel(failed) : '';
  const which = failed ? `${label[0]!.toUpperCase()}${label.slice(1)} (port ${failed.port})` : 'The rollout';
  // Only a dead instance was killed; a live one that never answered is reported as such.
  const exitCause =
    failed && !outcome.healthy && outcome.reason === 'exited' ? await runtime.exitCause(failed, input.limits) : null;
  const reason =
    outcome.healthy || outcome.reason === 'aborted'
      ? `${which} was stopped: ${String(signal.reason ?? 'the rollout was cancelled.')}`
      : exitCause
        ? `${which} was killed: ${exitCause}, before it answered GET /ok.`
        : outcome.reason === 'exited'
          ? `${which} exited before it answered GET /ok.`
          : `${which} did not answer GET /ok within the rollout deadline.`;
  const searched = failed ? await lastLines(failed.logPath, START_FAILURE_SEARCH_LINES) : [];
  const lines = searched.slice(-FAILURE_LOG_LINES);
  const startFailure =
    searched.findLast((l) => START_FAILURE.test(l)) ??
    (input.image ? containerStartFailure(searched, input.image.config.command) : null);
  const message = lines.length ? `${reason} Last log lines:\n${lines.join('\n')}` : reason;
  return redactValues(startFailure ? `${startFailure}\n${message}` : message, input.secretValues);
}
