import type { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { DeploymentActivity } from './deployment-activity.repository.js';

/** A DataSource whose every statement is counted and answers "no row written". */
function countingDataSource(): { dataSource: DataSource; statements: () => number } {
  let n = 0;
  const client = {
    query: async () => {
      n++;
      return { rows: [] };
    },
  };
  const dataSource = { manager: { queryRunner: { connect: async () => client } } } as unknown as DataSource;
  return { dataSource, statements: () => n };
}

describe('DeploymentActivity throttle', () => {
  it('sends one statement per deployment per interval, whatever the number of calls', async () => {
    const { dataSource, statements } = countingDataSource();
    let clock = 0;
    const activity = new DeploymentActivity(dataSource, 60_000, () => clock);
    expect(await activity.record('a')).toBe('unchanged');
    expect(await activity.record('b')).toBe('unchanged');
    for (let i = 0; i < 50; i++) {
      clock += 1_000;
      await activity.record('a');
    }
    expect(statements()).toBe(2); // 50 s later: still within a's minute
    clock += 10_000;
    await activity.record('a');
    expect(statements()).toBe(3);
  });

  it('keeps a failed write throttled: a database outage costs one statement per interval', async () => {
    let n = 0;
    const failing = {
      manager: {
        queryRunner: { connect: async () => ({ query: async () => (n++, Promise.reject(new Error('down'))) }) },
      },
    };
    const activity = new DeploymentActivity(failing as unknown as DataSource, 60_000, () => 0);
    await expect(activity.record('a')).rejects.toThrow('down');
    expect(await activity.record('a')).toBe('throttled');
    expect(n).toBe(1);
  });

  it('remembers a bounded number of deployments: the oldest write is forgotten first', async () => {
    const { dataSource, statements } = countingDataSource();
    const activity = new DeploymentActivity(dataSource, 60_000, () => 0);
    for (let i = 0; i <= 50_000; i++) await activity.record(`d${i}`);
    expect(statements()).toBe(50_001);
    expect(await activity.record('d50000')).toBe('throttled'); // the newest is still remembered
    expect(await activity.record('d0')).toBe('unchanged'); // the oldest was forgotten: written again
    expect(statements()).toBe(50_002);
  });
});
