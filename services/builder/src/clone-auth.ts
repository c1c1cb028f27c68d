import type { Config } from '@slipway/config';
import type { SecretsCodec } from '@slipway/crypto';
import type { DataSource } from '@slipway/db';
import type { CloneProtocol } from '@slipway/source';
import { IntegrationUnavailable, integrationProvider } from '@slipway/worker';
import { BuildError } from './build-steps.js';
import type { BuildRow } from '@slipway/pipeline';
import type { CloneAccess } from './build-revision.processor.js';

/**
 * Clone access for a repohost deployment, from its integration's provider: `checkCloneUrl()`
 * (issue 8 item 4: `local` only through its root, github/gitea only over https to their own
 * host) then `cloneAuth()` (a token header for github/gitea, nothing for local). Credentials
 * are sealed with the integration id as context, as the api stores them.
 */
export function integrationCloneAccess(
  config: Readonly<Config>,
  dataSource: DataSource,
  secrets: SecretsCodec,
): (build: BuildRow) => Promise<CloneAccess> {
  return async (build) => {
    if (!build.integration_id)
      throw new BuildError('The deployment has no integration to clone its repository through.');
    const found = await integrationProvider(config, dataSource, secrets, build.integration_id).catch((err: Error) => {
      throw err instanceof IntegrationUnavailable ? new BuildError(err.message) : err;
    });
    if (!found) throw new BuildError(`The deployment's integration ${build.integration_id} no longer exists.`);
    const { name, provider } = found;
    let protocol: CloneProtocol;
    try {
      protocol = await provider.checkCloneUrl(build.source_config.repo_url ?? '');
    } catch (err) {
      throw new BuildError(`The repository URL was refused: ${(err as Error).message}`);
    }
    try {
      return { auth: await provider.cloneAuth(), protocol };
    } catch (err) {
      throw new BuildError(`Could not get clone credentials from integration '${name}': ${(err as Error).message}`);
    }
  };
}
