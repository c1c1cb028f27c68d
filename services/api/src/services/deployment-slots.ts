import type { Config } from '@slipway/config';
import {
  DeploymentSlotsRepository,
  QuotaRepository,
  type DataSource,
  type EntityManager,
  type Rider,
  type SlotClaim,
} from '@slipway/db';
import { assertScaleWithin, QuotaExceededError, UnavailableError, type ResourceSpec } from '@slipway/domain';
import type { Logger } from '@slipway/logging';

/** A create's slot claim found no free slot: its transaction rolls back (`DeploymentSlots.withSlot`). */
export class SlotLayOutNeeded extends Error {
  constructor() {
    super('no free deployment slot: the slots are laid out again and the create runs again');
  }
}

/** Attempts of one create before it gives up (503): each lost the free slots to concurrent creates. */
const SLOT_ATTEMPTS = 8;
/** After a top-up found no room, the workspace is not topped up again for this long. */
const FULL_FOR_MS = 30_000;
/** Workspaces remembered as full at most (then forgotten at once: a top-up too many is harmless). */
const MAX_REMEMBERED = 10_000;

/**
 * The deployments quota on create (docs/operations.md, Quotas and retention), as slot rows
 * (DeploymentSlotsRepository): a create's last statement claims a free one with SKIP LOCKED, so
 * the creates of a workspace do not wait for each other, and never take more than the quota.
 *
 * Slots are laid out under the workspace lock, never inside a create's transaction: a claim can
 * leave a lock on a slot row it did not take (FOR UPDATE SKIP LOCKED follows a row that another
 * create took and committed meanwhile, re-checks it, skips it, and keeps the lock), and a
 * transaction holding such a lock while it waits for the workspace lock deadlocks with the one
 * laying slots out, which waits for every lock on a free row it deletes. So a create that finds
 * no free slot rolls back, the slots are laid out in a short transaction of their own, and the
 * create runs again (`withSlot`). So that this stays rare, a create that sees the free rows run
 * low has the next slice added after it commits (`topUpSoon`), without waiting for anything.
 */
export class DeploymentSlots {
  /** Workspaces whose free rows a create saw run low, until its request tops them up. */
  private readonly low = new Set<string>();
  private readonly toppingUp = new Map<string, Promise<void>>();
  /** Workspaces a top-up found without room, until when. */
  private readonly full = new Map<string, number>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly defaults: Config['quotas'],
    private readonly log: Logger,
  ) {}

  /**
   * The claim of a slot for the deployment this transaction just inserted, as a rider of the
   * create's last statement (a claimed slot stays locked until commit). Then `settle`.
   */
  claim(manager: EntityManager, workspaceId: string, deploymentId: string): Rider<SlotClaim> {
    return new DeploymentSlotsRepository(manager).claimRider(workspaceId, deploymentId, this.defaults.deployments);
  }

  /**
   * What the claim found. None (the slots run out, or the quota changed): SlotLayOutNeeded,
   * which rolls the create back. Claimed: the resource_spec must be within the ceilings.
   */
  settle(workspaceId: string, { claimed, overrides, low }: SlotClaim, spec: ResourceSpec): void {
    if (!claimed) throw new SlotLayOutNeeded();
    if (low) this.low.add(workspaceId);
    assertScaleWithin({ ...this.defaults, ...overrides }, spec);
  }

  /**
   * Runs a create's transaction (`attempt`) until its claim takes a slot: after an attempt that
   * found none, the slots are laid out again (`layOut`), which refuses a create over the quota
   * (403). After a create that saw the free rows run low, the next slice is added.
   */
  async withSlot<T>(workspaceId: string, attempt: () => Promise<T>): Promise<T> {
    for (let n = 1; ; n++) {
      try {
        const result = await attempt();
        if (this.low.delete(workspaceId)) this.topUpSoon(workspaceId);
        return result;
      } catch (err) {
        if (!(err instanceof SlotLayOutNeeded)) throw err;
        if (n === SLOT_ATTEMPTS)
          throw new UnavailableError(
            `Every free deployment slot was taken by concurrent creates ${n} times in a row; try again.`,
          );
      }
      await this.underWorkspaceLock(workspaceId, async (slots, quota) => {
        if (!(await slots.layOut(workspaceId, quota))) {
          throw new QuotaExceededError('deployments', quota, `this workspace already has ${quota} deployments`);
        }
      });
    }
  }

  /** The next slice, added in the background (one at a time per workspace); a failure only logs. */
  private topUpSoon(workspaceId: string): void {
    if (this.toppingUp.has(workspaceId) || (this.full.get(workspaceId) ?? 0) > Date.now()) return;
    const done = this.underWorkspaceLock(workspaceId, async (slots, quota) => {
      if (await slots.topUp(workspaceId, quota)) return;
      if (this.full.size >= MAX_REMEMBERED) this.full.clear();
      this.full.set(workspaceId, Date.now() + FULL_FOR_MS);
    })
      .catch((err: unknown) =>
        this.log.warn(
          { err, workspaceId },
          'adding free deployment slots failed; the next create that finds none adds them',
        ),
      )
      .finally(() => this.toppingUp.delete(workspaceId));
    this.toppingUp.set(workspaceId, done);
  }

  /** A transaction that takes the workspace lock before anything else, with the deployments quota in force. */
  private underWorkspaceLock(
    workspaceId: string,
    work: (slots: DeploymentSlotsRepository, quota: number) => Promise<void>,
  ): Promise<void> {
    return this.dataSource.transaction(async (manager) => {
      const quotas = new QuotaRepository(manager);
      await quotas.lockWorkspace(workspaceId);
      const { deployments } = await quotas.effective(workspaceId, this.defaults);
      await work(new DeploymentSlotsRepository(manager), deployments);
    });
  }
}
