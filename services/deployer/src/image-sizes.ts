import type { Config } from '@slipway/config';
import { RegistryRepository, type DataSource } from '@slipway/db';
import type { Logger } from '@slipway/logging';
import { deploymentOfRepository } from '@slipway/registry';
import { repositoryOf, type ImageCacheOptions, type UnpackMeasure } from '@slipway/runtime';

const MB = 1024 * 1024;

/**
 * The ImageCache's bound on an image's unpacked bytes (SLIPWAY_IMAGE_MAX_UNPACKED_MB), and where
 * what it measures goes: an image of the built-in registry has its unpacked bytes recorded on its
 * manifest's row, which the workspace's `registry_bytes` quota counts (a refused bomb counts the
 * bytes inflated before it was refused). Images of other registries are bounded the same, but no
 * quota of Slipway's holds them.
 */
export function imageCacheOptions(
  config: Pick<Config, 'registry' | 'runtime'>,
  dataSource: DataSource,
  log: Logger,
): ImageCacheOptions {
  const internalHost = new URL(config.registry.internalUrl).host;
  return {
    bound: { maxBytes: config.runtime.imageMaxUnpackedMb * MB, variable: 'SLIPWAY_IMAGE_MAX_UNPACKED_MB' },
    onMeasured: async ({ source, digest, unpackedBytes, refused }: UnpackMeasure) => {
      const repository = repositoryOf(source.reference);
      if (!repository.startsWith(`${internalHost}/`)) return;
      const name = repository.slice(internalHost.length + 1);
      const deploymentId = deploymentOfRepository(name);
      if (!deploymentId) return;
      try {
        await new RegistryRepository(dataSource.manager).recordUnpacked(name, digest, deploymentId, unpackedBytes);
      } catch (err) {
        // The pull goes on (or fails for its own reason); the quota counts it at the next pull.
        log.warn({ err, digest, repository: name }, 'recording the unpacked size of an image failed');
        return;
      }
      log.info({ digest, repository: name, unpackedBytes, refused }, 'image unpacked size recorded');
    },
  };
}
