import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { AddressesExhaustedError, SandboxAddresses } from '../../libs/runtime/src/sandbox/net/addresses.js';
import { parsePool, slotAddresses } from '../../libs/runtime/src/sandbox/net/pool.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/**
 * Sandbox address allocation in a real, migrated Postgres (`sandbox_networks`): claimers that
 * race, as builders and deployers do, never get one address twice, an owner keeps its address,
 * pools of one database stay apart, and a full pool says so.
 */
let database: TestDatabase;
let clients: pg.Pool;

beforeAll(async () => {
  database = await createTestDatabase();
  clients = new pg.Pool({ connectionString: database.url, max: 6 });
  // A bare pg.Pool throws an idle client's error (the shared server closing it) as an uncaught
  // exception, which fails the run outside any test. Queries on a live client still reject.
  clients.on('error', (err) => console.warn(`sandbox-addresses: idle connection closed: ${err.message}`));
});

afterAll(async () => {
  await clients?.end();
  await database?.drop();
});

const db = { query: async (sql: string, params?: unknown[]) => (await clients.query(sql, params)).rows };

describe('sandbox address allocation', () => {
  it('gives racing claimers distinct addresses, each owner the same one every time', async () => {
    const pool = parsePool('10.77.0.0/26'); // 15 sandbox slots
    const owners = Array.from({ length: 15 }, (_, i) => `i-race-${i}`);
    // Six "processes" (each its own allocator) claim at once, every owner twice.
    const allocators = Array.from({ length: 6 }, () => new SandboxAddresses(db, pool));
    const claims = await Promise.all(
      [...owners, ...owners].map((owner, i) => allocators[i % 6]!.claim(owner).then((slot) => ({ owner, slot }))),
    );
    const byOwner = new Map<string, Set<number>>();
    for (const { owner, slot } of claims) byOwner.set(owner, (byOwner.get(owner) ?? new Set()).add(slot));
    for (const [owner, slots] of byOwner) expect(slots.size, owner).toBe(1);
    const slots = [...byOwner.values()].map((s) => [...s][0]!);
    expect(new Set(slots).size).toBe(15);
    const rows = await db.query(
      `SELECT host(address) AS address, owner FROM sandbox_networks WHERE owner LIKE 'i-race-%'`,
    );
    expect(rows).toHaveLength(15);
    for (const row of rows) expect(row.address).toBe(slotAddresses(pool, slots[owners.indexOf(row.owner)]!).address);
  });

  it('says so when the pool is full, and hands a released address out again', async () => {
    const pool = parsePool('10.78.0.0/28'); // 3 sandbox slots
    const addresses = new SandboxAddresses(db, pool);
    for (const owner of ['b-1', 'b-2', 'b-3']) await addresses.claim(owner);
    await expect(addresses.claim('b-4')).rejects.toBeInstanceOf(AddressesExhaustedError);
    const freed = await addresses.slotOf('b-2');
    await addresses.release('b-2');
    expect(await addresses.claim('b-4')).toBe(freed);
  });

  it("keeps pools apart: another pool's holders neither count nor show", async () => {
    const a = new SandboxAddresses(db, parsePool('10.79.0.0/28'));
    const b = new SandboxAddresses(db, parsePool('10.80.0.0/28'));
    await a.claim('i-a');
    expect(await b.slotOf('i-a')).toBeNull();
    expect((await b.held()).map((h) => h.owner)).not.toContain('i-a');
    expect((await a.held()).map((h) => h.owner)).toEqual(['i-a']);
  });

  it('moves an owner to a new pool (SLIPWAY_SANDBOX_SUBNET changed while it held an address)', async () => {
    const before = new SandboxAddresses(db, parsePool('10.81.0.0/28'));
    const after = new SandboxAddresses(db, parsePool('10.82.0.0/28'));
    await before.claim('i-moved');
    const slot = await after.claim('i-moved');
    expect(await after.slotOf('i-moved')).toBe(slot);
    expect(await before.slotOf('i-moved')).toBeNull();
  });
});
