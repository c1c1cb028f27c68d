import type { DataSource } from '@slipway/db';
import { createLogger } from '@slipway/logging';
import { describe, expect, it } from 'vitest';
import { RouteTable } from './route-table.js';

// The table's bookkeeping alone: `apply` is what readAll and readOne do with each route they read
// from Postgres (test/e2e/edge.test.ts drives those against a real database).
const table = () =>
  new RouteTable(null as unknown as DataSource, '10.0.0.1', '10.0.0.1', createLogger({ name: 't', level: 'silent' }));
const route = (deploymentId: string, edgeName: string, servingPort: number, hosts: string[] = []) => ({
  deploymentId,
  edgeName,
  servingPort,
  hosts,
});

describe('RouteTable.apply', () => {
  it('routes names and custom domains to their deployment, and drops them with it', () => {
    const t = table();
    t.apply('x', route('x', 'shop', 9001, ['shop.example']));
    expect(t.lookup('shop')?.pool.current).toEqual([{ host: '10.0.0.1', port: 9001 }]);
    expect(t.lookupHost('shop.example')?.deploymentId).toBe('x');
    t.apply('x', route('x', 'store', 9001));
    expect(t.lookup('shop')).toBeUndefined();
    expect(t.lookupHost('shop.example')).toBeUndefined();
    expect(t.lookup('store')?.deploymentId).toBe('x');
    t.apply('x', null);
    expect(t.lookup('store')).toBeUndefined();
    expect(t.size).toBe(0);
  });

  it("a deployment's end read after the new holder of its name and domain takes neither from it", () => {
    // X was deleted and Y took its name and domain while the notifications were away: the full
    // read applies Y first, then X's end.
    const t = table();
    t.apply('x', route('x', 'shop', 9001, ['shop.example']));
    const xPool = t.lookup('shop')!.pool;
    t.apply('y', route('y', 'shop', 9002, ['shop.example']));
    t.apply('x', null);
    const y = t.lookup('shop');
    expect(y?.deploymentId).toBe('y');
    expect(y?.pool.current).toEqual([{ host: '10.0.0.1', port: 9002 }]);
    expect(t.lookupHost('shop.example')?.deploymentId).toBe('y');
    // X's own pool is the one given up.
    expect(xPool.current).toEqual([]);
    expect(t.size).toBe(1);
  });

  it('drops a read that started before the one last applied for that deployment', () => {
    // A full read starts (read 1), a notification's read of x starts and finishes (read 2) with
    // its new port, then the full read finishes with the old one.
    const t = table();
    t.apply('x', route('x', 'shop', 9002), 2);
    t.apply('x', route('x', 'shop', 9001), 1);
    expect(t.lookup('shop')?.pool.current).toEqual([{ host: '10.0.0.1', port: 9002 }]);
    t.apply('x', null, 1);
    expect(t.lookup('shop')?.deploymentId).toBe('x');
    t.apply('x', null, 3);
    expect(t.lookup('shop')).toBeUndefined();
  });

  it('a read that started before a deployment ended, and ends after, does not bring it back', async () => {
    const t = table();
    let finishSlow!: () => void;
    const slow = t.underRead(async (n) => {
      await new Promise<void>((resolve) => (finishSlow = resolve));
      t.apply('d', route('d', 'shop', 9001), n);
    });
    await t.underRead(async (n) => t.apply('d', route('d', 'shop', 9001), n));
    await t.underRead(async (n) => t.apply('d', null, n));
    finishSlow();
    await slow;
    expect(t.lookup('shop')).toBeUndefined();
    expect(t.size).toBe(0);
  });
});
