import type { Config } from '@slipway/config';
import { createDataSource, QuotaRepository, RegistryRepository, type DataSource } from '@slipway/db';
import type { RoomSource } from './push-guard.js';

/**
 * The push guard's reads, from Postgres: the workspace of a deployment, and its registry room
 * (RegistryRepository.registryRoom, the token endpoint's read). A small pool of its own,
 * connected on first use, so a registry that only serves pulls never opens one.
 */
export function databaseRooms(
  config: Pick<Config, 'databaseUrl' | 'quotas'>,
): RoomSource & { close: () => Promise<void> } {
  let dataSource: DataSource | null = null;
  let ready: Promise<DataSource> | null = null;
  const manager = async () => {
    ready ??= (async () => {
      dataSource = createDataSource({ url: config.databaseUrl, applicationName: 'slipway-registry', poolSize: 2 });
      await dataSource.initialize();
      return dataSource;
    })().catch((err: Error) => {
      ready = null;
      throw err;
    });
    return (await ready).manager;
  };
  return {
    workspaceOf: async (deploymentId) => new QuotaRepository(await manager()).workspaceOfDeployment(deploymentId),
    room: async (workspaceId, digests) =>
      new RegistryRepository(await manager()).registryRoom(workspaceId, config.quotas, digests),
    close: async () => {
      if (dataSource?.isInitialized) await dataSource.destroy();
    },
  };
}
