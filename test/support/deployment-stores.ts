import { Redis } from 'ioredis';
import { expect } from 'vitest';
import type { Config } from '@slipway/config';
import { dropDeploymentDatabase } from '@slipway/db';
import { deploymentDatabaseName } from '@slipway/domain';
import { deploymentRedisUser } from '@slipway/runtime';
import type { TestApi } from './test-api.js';

/** Creates a cloud-hosted deployment through the api; its id and database name (its stores are not provisioned yet). */
export async function createDeploymentRow(api: TestApi, name: string): Promise<{ id: string; database: string }> {
  const res = await api.http.post('/v2/deployments', {
    name,
    source: 'internal_source',
    source_config: { deployment_type: 'dev' },
    source_revision_config: {},
  });
  expect(res.status, res.text).toBe(201);
  return { id: res.body.id as string, database: deploymentDatabaseName(name, res.body.id) };
}

/** Drops what a test provisioned for its deployments: their Redis ACL users and databases (with their roles). */
export async function dropDeploymentStores(
  config: Readonly<Config>,
  made: ReadonlyArray<{ id: string; database: string }>,
): Promise<void> {
  const admin = new Redis(config.redisUrl);
  try {
    for (const d of made) {
      await admin.call('ACL', 'DELUSER', deploymentRedisUser(d.id)).catch(() => undefined);
      await dropDeploymentDatabase(config.databaseUrl, d.database).catch(() => undefined);
    }
  } finally {
    admin.disconnect();
  }
}
