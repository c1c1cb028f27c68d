import type { DeploymentRuntimeWrites, Queryable } from '../instance-types.js';

/** Thrown when every uid of the range is taken. */
export class UidsExhaustedError extends Error {
  override name = 'UidsExhaustedError';
}

/** The lowest uid of `min`–`max` not in `taken`, or null. */
export function pickUid(min: number, max: number, taken: ReadonlySet<number>): number | null {
  for (let uid = min; uid <= max; uid++) if (!taken.has(uid)) return uid;
  return null;
}

/**
 * One uid (and gid, the same number) per deployment, from the configured range, recorded in
 * `deployments.sandbox_uid` (unique, written through `deployments`), so builder and deployer
 * agree and a uid is never shared.
 */
export class SandboxIdentities {
  constructor(
    private readonly db: Queryable,
    private readonly deployments: DeploymentRuntimeWrites,
    private readonly min: number,
    private readonly max: number,
  ) {}

  async uidOf(deploymentId: string): Promise<number> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const [row] = (await this.db.query(`SELECT sandbox_uid FROM deployments WHERE id = $1`, [deploymentId])) as {
        sandbox_uid: number | null;
      }[];
      if (!row) throw new Error(`Deployment ${deploymentId} is gone.`);
      if (row.sandbox_uid !== null && row.sandbox_uid >= this.min && row.sandbox_uid <= this.max)
        return row.sandbox_uid;
      const taken = (await this.db.query(`SELECT sandbox_uid FROM deployments WHERE sandbox_uid BETWEEN $1 AND $2`, [
        this.min,
        this.max,
      ])) as { sandbox_uid: number }[];
      const uid = pickUid(this.min, this.max, new Set(taken.map((t) => Number(t.sandbox_uid))));
      if (uid === null) throw new UidsExhaustedError(`No free sandbox uid left in ${this.min}-${this.max}.`);
      try {
        await this.deployments.claimSandboxUid(deploymentId, uid, row.sandbox_uid);
      } catch (err) {
        // Another deployment took it first (unique index): pick again.
        if ((err as { code?: string }).code !== '23505') throw err;
      }
    }
    throw new UidsExhaustedError('Could not reserve a sandbox uid.');
  }
}
