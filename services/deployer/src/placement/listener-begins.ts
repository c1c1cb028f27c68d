import { readyBegunListenerDeployments, type DataSource } from '@slipway/db';
import type { RevisionFlow } from '@slipway/pipeline';

interface Waiting {
  revisionId: string;
  resolve: (begun: boolean) => void;
  reject: (err: unknown) => void;
}

/** The message a listener's rollout carries while its agent applies it. */
export const PUBLISHED = 'Published to the listener; waiting for its report.';

/**
 * Begins listener rollouts (AWAITING_DEPLOY → DEPLOYING) in batches, one transaction of two
 * statements each (a deployment's first rollout moves it AWAITING_DATABASE → READY, then
 * `RevisionFlow.beginAll`) instead of a transaction per revision. No wait is added: a rollout
 * arriving while no batch is being written is written at once; those arriving meanwhile go
 * together in the next. A batch that fails is written again one revision at a time, so one bad
 * row (or a deadlock) fails only its own job; a job that fails leaves its revision
 * AWAITING_DEPLOY for the reconciler, as a failed begin of its own would.
 */
export class ListenerRolloutBegins {
  private waiting: Waiting[] = [];
  private writing = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly flow: RevisionFlow,
    private readonly maxBatch = 500,
  ) {}

  /** True when this revision moved to DEPLOYING; false when it was no longer waiting for its rollout. */
  begin(revisionId: string): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ revisionId, resolve, reject });
      if (!this.writing) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.writing = true;
    try {
      while (this.waiting.length) await this.write(this.waiting.splice(0, this.maxBatch));
    } finally {
      this.writing = false;
    }
  }

  private async write(batch: Waiting[]): Promise<void> {
    try {
      const begun = new Set(await this.beginAll(batch.map((w) => w.revisionId)));
      for (const w of batch) w.resolve(begun.has(w.revisionId));
    } catch (err) {
      if (batch.length === 1) return batch[0]!.reject(err);
      for (const w of batch) await this.write([w]);
    }
  }

  private beginAll(revisionIds: string[]): Promise<string[]> {
    // Two statements, one transaction: the batch's deployments still AWAITING_DATABASE become
    // READY as their first rollout begins (readyBegunListenerDeployments, locking them first, as
    // a delete does), then the rollouts begin.
    return this.dataSource.transaction(async (m) => {
      await readyBegunListenerDeployments(m, revisionIds);
      return this.flow.beginAll(m, revisionIds, 'rollout', { message: PUBLISHED, set: { heartbeatAt: null } });
    });
  }
}
