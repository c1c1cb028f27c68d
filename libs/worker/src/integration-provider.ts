import type { Config } from '@slipway/config';
import type { SecretsCodec } from '@slipway/crypto';
import { IntegrationRepository, type DataSource } from '@slipway/db';
import { createRepohostProvider, type ProviderSpec, type RepohostProvider } from '@slipway/source';

/** An integration's provider could not be made; `message` says why (never a credential). */
export class IntegrationUnavailable extends Error {}

/**
 * The provider of a repohost integration, its credentials opened (sealed with the integration id
 * as context, as the api stores them), bound to the outbound policy and the `local` root: what
 * a worker clones through (the builder) or reports to (previews' commit statuses). Null when the
 * integration no longer exists.
 */
export async function integrationProvider(
  config: Readonly<Config>,
  dataSource: DataSource,
  secrets: SecretsCodec,
  integrationId: string,
): Promise<{ name: string; provider: RepohostProvider } | null> {
  const row = await new IntegrationRepository(dataSource.manager).findForClone(integrationId);
  if (!row) return null;
  let credentials: Record<string, unknown> | null;
  try {
    credentials = row.credentialsSealed
      ? secrets.openJson<Record<string, unknown>>(row.credentialsSealed, row.id)
      : null;
  } catch (err) {
    throw new IntegrationUnavailable(
      `The credentials of integration '${row.name}' could not be decrypted (${(err as Error).message}).`,
    );
  }
  const spec = { provider: row.provider, name: row.name, config: row.config, credentials } as ProviderSpec;
  return {
    name: row.name,
    provider: createRepohostProvider(spec, { localReposRoot: config.localReposRoot, outbound: config.outbound }),
  };
}
