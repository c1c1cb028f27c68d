import { Redis } from 'ioredis';
import type { Config } from '@slipway/config';
import { dropDeploymentDatabase } from '@slipway/db';
import { deploymentRedisUser } from '@slipway/runtime';

/** Drops what a test provisioned for its deployments: their Redis ACL users and databases (with their roles). */
export async function dropDeploymentStores(config: Readonly<Config>, made: ReadonlyArray<{ id: string; database: string }>): Promise<void> {
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
