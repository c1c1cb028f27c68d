import type { Queryable } from '../../instance-types.js';
import { intToIpv4, ipv4ToInt, pickSlot, slotOf, type Pool } from './pool.js';

/** Thrown when every address of the pool is taken. */
export class AddressesExhaustedError extends Error {
  override name = 'AddressesExhaustedError';
}

/**
 * Which sandbox holds which address of the pool, in `sandbox_networks` (unique by address and
 * by owner), so builders and deployers — several processes — never hand out one twice.
 */
export class SandboxAddresses {
  constructor(
    private readonly db: Queryable,
    private readonly pool: Pool,
  ) {}

  async slotOf(owner: string): Promise<number | null> {
    const [row] = (await this.db.query(
      `SELECT host(address) AS address FROM sandbox_networks WHERE owner = $1 AND address << $2::inet`,
      [owner, this.pool.cidr],
    )) as { address: string }[];
    return row ? slotOf(this.pool, row.address) : null;
  }

  /** The owner's slot, claimed now if it has none. */
  async claim(owner: string): Promise<number> {
    for (let attempt = 0; attempt < 8; attempt++) {
      // An address of another pool (SLIPWAY_SANDBOX_SUBNET changed since): this pool's counts now.
      await this.db.query(`DELETE FROM sandbox_networks WHERE owner = $1 AND NOT address << $2::inet`, [
        owner,
        this.pool.cidr,
      ]);
      // One read for "mine already?" and "what is taken": a concurrent claim of the same owner that
      // commits in between is then seen as this owner's, never as the pool's last free address.
      const holders = await this.held();
      const mine = holders.find((h) => h.owner === owner);
      if (mine) return mine.slot;
      const slot = pickSlot(this.pool, new Set(holders.map((h) => h.slot)));
      if (slot === null) throw new AddressesExhaustedError(`No free sandbox address left in ${this.pool.cidr}.`);
      try {
        await this.db.query(`INSERT INTO sandbox_networks (address, owner) VALUES ($1::inet, $2)`, [
          intToIpv4(this.pool.base + slot * 4 + 2),
          owner,
        ]);
        return slot;
      } catch (err) {
        // The address (or this owner) was taken meanwhile: look again.
        if ((err as { code?: string }).code !== '23505') throw err;
      }
    }
    throw new AddressesExhaustedError('Could not reserve a sandbox address.');
  }

  async release(owner: string): Promise<void> {
    await this.db.query(`DELETE FROM sandbox_networks WHERE owner = $1`, [owner]);
  }

  /** Every holder of an address of the pool. */
  async held(): Promise<{ owner: string; slot: number }[]> {
    const rows = (await this.db.query(
      `SELECT owner, host(address) AS address FROM sandbox_networks WHERE address << $1::inet`,
      [this.pool.cidr],
    )) as { owner: string; address: string }[];
    return rows.flatMap((r) => {
      const slot = ipv4ToInt(r.address) === null ? null : slotOf(this.pool, r.address);
      return slot === null ? [] : [{ owner: r.owner, slot }];
    });
  }
}
