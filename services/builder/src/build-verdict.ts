import { rm } from 'node:fs/promises';
import type { DataSource } from '@slipway/db';
import { artifactUri, GraphConfigError } from '@slipway/domain';
import type { Logger } from '@slipway/logging';
import type { PhaseGuard, RevisionFlow } from '@slipway/pipeline';
import { SourceFetchError } from '@slipway/source';
import { BuildError, type BuildLog } from './build-steps.js';
import { CommandAbortedError } from './run-command.js';

/** The build stopped because the revision is no longer this attempt's to build. */
export class OwnershipLost extends Error {}

const minutes = (ms: number) => (ms >= 60_000 ? `${Math.round(ms / 60_000)} min` : `${Math.round(ms / 1000)} s`);

/** What the verdict is given of the build attempt it ends. */
export interface VerdictContext {
  dataSource: DataSource;
  flow: RevisionFlow;
  revisionId: string;
  attempt: number;
  /** The attempt's artifact directory: removed when the revision moved on before the hand-over. */
  artifact: string;
  /** The build phase's deadline (`config.pipeline.buildDeadlineMs`), named when a build ran past it. */
  buildDeadlineMs: number;
  guard: PhaseGuard;
  buildLog: BuildLog;
  log: Logger;
}

/**
 * How one build attempt ends (RevisionBuild.run): handed to the rollout, failed, or stopped by its
 * guard. Each verdict writes what the build log must say at once, and returns the step that
 * moves the revision, which the build applies last, once the log is flushed.
 */
export class BuildVerdict {
  constructor(private readonly ctx: VerdictContext) {}

  /**
   * Ends the build phase (BUILDING → AWAITING_DEPLOY, and the rollout job, in one transaction:
   * RevisionFlow.complete), while the revision is still this attempt's. Never a failure to report: null.
   */
  async handToRollout(commit: string | null, agentServer: boolean, requestId: string | undefined): Promise<null> {
    const handed = await this.ctx.dataSource.transaction((m) =>
      this.ctx.flow.complete(m, this.ctx.revisionId, 'build', {
        attempt: this.ctx.attempt,
        message: `Built ${commit ? `commit ${commit.slice(0, 12)}` : 'the uploaded source'}; waiting for the deployer.`,
        // Whether the platform serves the project's graphs (the artifact's `agent_server`): the
        // deployment resource says so (`agent_server`), and a redeploy copies it with the config.
        set: {
          artifactRef: this.ctx.artifact,
          imageUri: artifactUri(this.ctx.revisionId),
          heartbeatAt: null,
          revisionConfig: { agent_server: agentServer },
        },
        ...(requestId ? { requestId } : {}),
      }),
    );
    if (!handed) {
      // Interrupted (or taken over) in the last moment: nobody will ever roll this artifact out.
      await rm(this.ctx.artifact, { recursive: true, force: true });
      this.ctx.log.info('revision moved on before the build was handed over; artifact removed');
      return null;
    }
    this.ctx.log.info({ commit, artifact: this.ctx.artifact }, 'build done; revision handed to the rollout queue');
    return null;
  }

  /** Marks the revision BUILD_FAILED (if it is still ours); returns the message, or null when someone else moved it. */
  private async failWith(message: string): Promise<string | null> {
    const applied = await this.ctx.dataSource.transaction((m) =>
      this.ctx.flow.fail(m, this.ctx.revisionId, 'build', { attempt: this.ctx.attempt, from: ['BUILDING'], message }),
    );
    return applied ? message : null;
  }

  private withTail(what: string): string {
    const tail = this.ctx.buildLog.tail();
    return this.ctx.buildLog.redact(tail.length ? `${what}\nLast log lines:\n${tail.join('\n')}` : what);
  }

  /** Writes why the build failed to its log now; the returned step marks the revision BUILD_FAILED. */
  failed(err: unknown): () => Promise<string | null> {
    const known = err instanceof BuildError || err instanceof SourceFetchError || err instanceof GraphConfigError;
    const what = known
      ? (err as Error).message
      : `The build failed unexpectedly: ${(err as Error)?.message ?? String(err)}`;
    if (!known) this.ctx.log.error({ err }, 'build failed unexpectedly');
    const message = this.withTail(what);
    this.ctx.buildLog.line(`Build failed: ${what}`, 'error');
    return async () => {
      const failed = await this.failWith(message);
      this.ctx.log.warn({ failed: !!failed, reason: this.ctx.buildLog.redact(what) }, 'build failed');
      return failed;
    };
  }

  /**
   * The guard aborted (or a check found the revision moved on). If the revision is still ours
   * and BUILDING, the only reason left is its deadline: fail it saying so. Otherwise whoever
   * moved it (an interruption, the reconciler) already set its status.
   */
  stopped(err: unknown): () => Promise<string | null> {
    const reason = this.ctx.guard.reason ?? 'the revision moved on';
    if (!(err instanceof CommandAbortedError || err instanceof OwnershipLost))
      this.ctx.log.debug({ err }, 'step ended by the abort');
    const message = this.withTail(`The build exceeded its deadline of ${minutes(this.ctx.buildDeadlineMs)}.`);
    this.ctx.buildLog.line(`Build stopped: ${reason}`, 'warn');
    return async () => {
      const failed = this.ctx.guard.signal.aborted ? await this.failWith(message) : null;
      this.ctx.log.info({ reason, deadline: !!failed }, 'build stopped');
      return failed;
    };
  }
}
