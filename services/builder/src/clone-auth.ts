import type { Config } from '@slipway/config';
import type { SecretsCodec } from '@slipway/crypto';
import { IntegrationRepository, type DataSource } from '@slipway/db';
import { createRepohostProvider, type CloneProtocol, type ProviderSpec } from '@slipway/source';
import { BuildError } from './build-steps.js';
import type { BuildRow } from '@slipway/pipeline';
import type { CloneAccess } from './build-revision.processor.js';

/**
 * Clone access for a repohost deployment, from its integration's provider: `checkCloneUrl()`
 * (issue 8 item 4: `local` only through its root, github/gitea only over https to their own
 * host) then `cloneAuth()` (a token header for github/gitea, nothing for local). Credentials
 * are sealed with the integration id as context, as the api stores them.
 */
export function integrationCloneAccess(config: Readonly<Config>, dataSource: DataSource, secrets: SecretsCodec): (build: BuildRow) => Promise<CloneAccess> {
  return async (build) => {
    if (!build.integration_id) throw new BuildError('The deployment has no integration to clone its repository through.');
    const row = await new IntegrationRepository(dataSource.manager).findForClone(build.integration_id);
    if (!row) throw new BuildError(`The deployment's integration ${build.integration_id} no longer exists.`);
    let credentials: Record<string, unknown> | null;
    try {
      credentials = row.credentialsSealed ? secrets.openJson<Record<string, unknown>>(row.credentialsSealed, row.id) : null;
    } catch (err) {
      throw new BuildError(`The credentials of integration '${row.name}' could not be decrypted (${(err as Error).message}).`);
    }
    const spec = { provider: row.provider, name: row.name, config: row.config, credentials } as ProviderSpec;
    const provider = createRepohostProvider(spec, { localReposRoot: config.localReposRoot, outbound: config.outbound });
    let protocol: CloneProtocol;
    try {
      protocol = await provider.checkCloneUrl(build.source_config.repo_url ?? '');
    } catch (err) {
      throw new BuildError(`The repository URL was refused: ${(err as Error).message}`);
    }
    try {
      return { auth: await provider.cloneAuth(), protocol };
    } catch (err) {
      throw new BuildError(`Could not get clone credentials from integration '${row.name}': ${(err as Error).message}`);
    }
  };
}
