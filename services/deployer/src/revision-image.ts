import type { Config } from '@slipway/config';
import { deploymentOfRepository, parseImageReference, PLATFORM_ACCOUNT, registrySecrets } from '@slipway/registry';
import { ImageError, type CachedImage, type ImageCache, type ImageSource } from '@slipway/runtime';

/** What a revision says about its image. */
export interface RevisionImageRow {
  deployment_id: string;
  source: string;
  image_uri: string | null;
  image_digest: string | null;
}

/**
 * Where the deployer pulls an image revision from: the built-in registry (reached at its internal
 * address) with the platform's own credential, which the api's token endpoint turns into a pull
 * token. Only the deployment's own repositories: the platform credential may pull any repository,
 * so a revision naming another deployment's image is refused here.
 */
export function imageSource(config: Pick<Config, 'registry' | 'secretsKey'>, row: RevisionImageRow): ImageSource {
  const ref = row.image_uri ? parseImageReference(row.image_uri) : null;
  if (!ref) throw new ImageError(`The revision's image_uri '${row.image_uri ?? ''}' is not an image reference.`);
  if (ref.registry !== config.registry.publicAddress || deploymentOfRepository(ref.repository) !== row.deployment_id) {
    throw new ImageError(
      `Slipway runs images of the deployment's own repositories in its built-in registry (${config.registry.publicAddress}/${row.deployment_id}/<name>); ${row.image_uri} is elsewhere. Push it there, or register a listener to run it.`,
    );
  }
  const internal = new URL(config.registry.internalUrl);
  const digest = row.image_digest ?? ref.digest;
  return {
    reference: `${internal.host}/${ref.repository}${digest ? `@${digest}` : `:${ref.tag ?? 'latest'}`}`,
    digest,
    credentials: `${PLATFORM_ACCOUNT}:${registrySecrets(config).platformPassword}`,
    tlsVerify: internal.protocol === 'https:',
  };
}

/** The revision's image, pulled and unpacked unless this machine has it already; `notes` say which. */
export async function revisionImage(
  config: Pick<Config, 'registry' | 'secretsKey'>,
  images: ImageCache | null,
  row: RevisionImageRow,
): Promise<{ image: CachedImage; notes: { line: string; level: 'info' }[] }> {
  if (!images) throw new ImageError('Images run in the embedded container runtime, which needs the sandbox (root, runc, cgroups); this deployer runs without it.');
  const source = imageSource(config, row);
  const image = await images.ensure(source);
  const line = image.pulled
    ? `Pulled and unpacked image ${row.image_uri} (${image.digest}).`
    : `Image ${image.digest} is already unpacked on this machine; no pull.`;
  return { image, notes: [{ line, level: 'info' }] };
}
