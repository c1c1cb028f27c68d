import { ProcessRuntimeRepository } from '@slipway/db';
import { probeHealth, type InstanceRecord, type StartInstancesInput } from '@slipway/runtime';
import type { InstanceContext, InstanceKeeper } from './instances.js';

/** An adopted instance that is alive but fails this many probes in a row is restarted. */
const ADOPTION_STRIKES = 5;
/**
 * A serving instance that fails this many probes in a row (one per pass, each with its own
 * timeout) stops receiving traffic and is replaced: a single slow answer on a busy machine is
 * not a dead server.
 */
export const SERVING_STRIKES = 3;

/**
 * One supervision pass over every cloud-hosted deployment with a proxy or live instances:
 * re-adopts instances recorded as running (alive and healthy: no new process), restarts dead
 * ones (same artifact, same port when free), probes every serving instance (continuous health:
 * one that stops answering leaves the proxy's targets and is replaced; queue workers alike,
 * without traffic), and stops leftovers of rollouts or retirements that died midway.
 */
export class Supervision {
  private readonly strikes = new Map<string, number>();
  /** Queue workers known to answer (they receive no traffic, so Traffic does not know them). */
  private readonly workers = new Set<string>();

  constructor(
    private readonly ctx: InstanceContext,
    private readonly keeper: InstanceKeeper,
    private readonly revision: (revisionId: string) => Promise<StartInstancesInput>,
  ) {}

  async pass(): Promise<void> {
    for (const id of await new ProcessRuntimeRepository(this.ctx.dataSource.manager).supervised()) {
      if (this.ctx.stopping.aborted) return;
      await this.ctx.work
        .serialize(id, () => this.deployment(id))
        .catch((err) => this.ctx.log.warn({ err, deploymentId: id }, 'supervising the deployment failed'));
    }
  }

  forget(instanceId: string): void {
    this.strikes.delete(instanceId);
    this.workers.delete(instanceId);
  }

  /** Whether a queue worker is known to answer its health probe. */
  watching(instanceId: string): boolean {
    return this.workers.has(instanceId);
  }

  /** One deployment, read fresh (under its turn, so it never interleaves with a switch). */
  private async deployment(deploymentId: string): Promise<void> {
    const { dataSource, traffic, runtime, tailers, log } = this.ctx;
    if (this.keeper.tearingDown.has(deploymentId)) return;
    const d = await new ProcessRuntimeRepository(dataSource.manager).servingState(deploymentId);
    if (!d || d.status === 'AWAITING_DELETE') return;
    if (d.servingPort) {
      await traffic
        .ensureProxy(deploymentId)
        .catch((err) => log.warn({ err, deploymentId, port: d.servingPort }, 'could not open the serving proxy'));
    }
    const serving: { row: InstanceRecord; rev: StartInstancesInput }[] = [];
    for (const row of await runtime.store.live({ deploymentId })) {
      if (this.keeper.busy.has(row.id) || this.keeper.rollingOut.has(row.revisionId)) continue;
      // Instances of the active revision are meant to run; anything else is a leftover (an
      // interrupted retirement, a rollout whose deployer died) and is stopped.
      if (row.revisionId !== d.activeRevisionId || row.status === 'stopping') {
        traffic.remove(deploymentId, row.id);
        this.forget(row.id);
        this.keeper.retire(row, 0);
        continue;
      }
      const rev = await this.revision(row.revisionId).catch((err) => {
        log.warn({ err, revisionId: row.revisionId }, 'cannot load the revision of a running instance');
        return null;
      });
      if (!rev) continue;
      if (row.status === 'starting' || !runtime.isAlive(row)) {
        this.forget(row.id);
        if (row.status === 'starting')
          this.keeper.restart(row, rev, 'was left starting by an earlier deployer', 'left_starting');
        else this.keeper.restart(row, rev, 'exited', 'exited');
        continue;
      }
      await tailers.ensure(row, rev.secretValues);
      if (row.role === 'queue' ? this.workers.has(row.id) : traffic.has(deploymentId, row.id))
        serving.push({ row, rev });
      else await this.readopt(row, rev);
    }
    await Promise.all(serving.map(({ row, rev }) => this.probeServing(row, rev)));
  }

  /** Continuous health of an instance receiving traffic, or of a queue worker; see SERVING_STRIKES. */
  private async probeServing(row: InstanceRecord, rev: StartInstancesInput): Promise<void> {
    const healthy = await probeHealth(this.ctx.runtime.instanceHost(row), row.port);
    this.ctx.metrics.probed(row.id, healthy);
    if (healthy) {
      this.strikes.delete(row.id);
      return;
    }
    const strikes = (this.strikes.get(row.id) ?? 0) + 1;
    this.strikes.set(row.id, strikes);
    this.ctx.log.warn(
      { deploymentId: row.deploymentId, instanceId: row.id, port: row.port, strikes },
      'a serving instance failed its health probe',
    );
    if (strikes < SERVING_STRIKES) return;
    this.strikes.delete(row.id);
    // Out of the proxy's targets now, whether or not a restart may start yet (backoff).
    this.ctx.traffic.remove(row.deploymentId, row.id);
    this.workers.delete(row.id);
    this.ctx.events('unhealthy', 'unhealthy');
    this.keeper.restart(row, rev, `stopped answering its health probe (${strikes} failures in a row)`, 'unhealthy');
  }

  /**
   * Alive but not known to serve (a deployer restart, a queue worker a rollout or restart just
   * started): re-adopted once it answers, an API instance into the proxy's targets.
   */
  private async readopt(row: InstanceRecord, rev: StartInstancesInput): Promise<void> {
    // Its namespace's DNS relay is this process's to serve now.
    await this.ctx.runtime
      .adoptNetwork(row)
      .catch((err) =>
        this.ctx.log.warn({ err, instanceId: row.id }, 'could not adopt the network of a running instance'),
      );
    if (await probeHealth(this.ctx.runtime.instanceHost(row), row.port)) {
      this.strikes.delete(row.id);
      if (row.role === 'queue') {
        if (!this.workers.has(row.id))
          this.ctx.log.info(
            { deploymentId: row.deploymentId, instanceId: row.id, pid: row.pid, port: row.port },
            'watching a queue worker',
          );
        this.workers.add(row.id);
        return;
      }
      this.ctx.traffic.add(row);
      this.ctx.log.info(
        { deploymentId: row.deploymentId, instanceId: row.id, pid: row.pid, port: row.port },
        're-adopted a running instance',
      );
      return;
    }
    const strikes = (this.strikes.get(row.id) ?? 0) + 1;
    this.strikes.set(row.id, strikes);
    if (strikes >= ADOPTION_STRIKES) {
      this.strikes.delete(row.id);
      this.keeper.restart(row, rev, `did not answer its health probe ${strikes} times`, 'unhealthy');
    }
  }
}
