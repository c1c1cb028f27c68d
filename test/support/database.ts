import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

export interface TestDatabase {
  name: string;
  url: string;
  drop: () => Promise<void>;
}

/** A fresh, migrated database cloned from the run's template; dropped by `drop()` or at run end. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const server = inject('pgServerUrl');
  const name = `slipway_t_${inject('runId')}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  try {
    await admin.query(
      `CREATE DATABASE ${pg.escapeIdentifier(name)} TEMPLATE ${pg.escapeIdentifier(inject('templateDatabase'))}`,
    );
  } finally {
    await admin.end();
  }
  const url = new URL(server);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: server });
      await client.connect();
      await client
        .query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`)
        .finally(() => client.end());
    },
  };
}

/** A BullMQ/Redis key prefix owned by one test file, so files never see each other's jobs. */
export function testQueuePrefix(label = 'f'): string {
  return `slipway_t_${inject('runId')}_${label}_${randomBytes(3).toString('hex')}`;
}
