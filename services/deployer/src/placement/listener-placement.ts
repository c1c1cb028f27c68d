import type { DataSource } from '@slipway/db';
import type { JobContext } from '@slipway/jobs';
import type { PhaseGuard, RevisionFlow } from '@slipway/pipeline';
import { ListenerRolloutBegins } from './listener-begins.js';
import type { Placement } from './placement.js';

/**
 * A listener's cluster. Its agent polls the desired state the api renders from the rows
 * (docs/api.md, Listener agent protocol): a revision DEPLOYING is what it applies, a deployment
 * AWAITING_DELETE what it removes; its reports end both. The deployer only marks the revision
 * DEPLOYING; from then on the phase deadline (the reconciler) bounds the wait, not a heartbeat.
 */
export class ListenerPlacement implements Placement {
  readonly kind = 'listener';
  readonly beginsAtOnce = true;

  private readonly begins: ListenerRolloutBegins;

  constructor(dataSource: DataSource, flow: RevisionFlow) {
    this.begins = new ListenerRolloutBegins(dataSource, flow);
  }

  /**
   * The cluster runs the deployment's stores (a StatefulSet in its desired state): only the name
   * is recorded. The api's create records it and queues no job (`initialDeploymentState`); the
   * deployment becomes READY as its first rollout begins (`ListenerRolloutBegins`). This runs only
   * for a deployment created before that, whose `provision.deployment` job is still pending.
   */
  async provision(): Promise<void> {}

  /** Begins at once (`beginsAtOnce`): its job runs no heartbeat. */
  async rollout(revisionId: string, _guard: PhaseGuard, { log }: JobContext): Promise<void> {
    // Rollouts whose jobs run at once begin together, in one statement (ListenerRolloutBegins).
    const applied = await this.begins.begin(revisionId);
    log.info({ applied }, 'revision published to its listener');
  }

  async teardown(_deployment: { id: string; name: string }, { log }: JobContext): Promise<void> {
    log.info('teardown published to the listener; waiting for its report');
  }
}
