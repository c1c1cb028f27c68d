import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { Config } from '@slipway/config';
import { addressRefusal, hostAllowed, type OutboundPolicy } from '@slipway/net';
import { deploymentOfRepository, parseImageReference, PLATFORM_ACCOUNT, registrySecrets } from '@slipway/registry';
import { credentialForms, pullCredential, type RegistryCredential, type SecretEntry } from '@slipway/domain';
import { redactValues } from '@slipway/logging';
import { ImageError, type CachedImage, type ImageCache, type ImageSource } from '@slipway/runtime';

/** What a revision says about its image. */
export interface RevisionImageRow {
  deployment_id: string;
  source: string;
  image_uri: string | null;
  image_digest: string | null;
  resource_spec: { image_pull_secrets?: Array<{ name: string }> } | null;
}

type ImageConfigPart = Pick<Config, 'registry' | 'secretsKey' | 'outbound'>;

/**
 * Where the deployer pulls an image revision from: the built-in registry (reached at its internal
 * address) with the platform's own credential, which the api's token endpoint turns into a pull
 * token. Only the deployment's own repositories: the platform credential may pull any repository,
 * so a revision naming another deployment's image there is refused. Any other registry
 * (`external_container`) is pulled over https to a public address unless
 * SLIPWAY_OUTBOUND_ALLOW_HOSTS lists it (as for every user-supplied URL), with the credential
 * for its host among the revision's `image_pull_secrets` (its `secrets`), else anonymously.
 */
export async function imageSource(
  config: ImageConfigPart,
  row: RevisionImageRow,
  secrets: readonly SecretEntry[] = [],
): Promise<ImageSource & { masked: string[] }> {
  const ref = row.image_uri ? parseImageReference(row.image_uri) : null;
  if (!ref)
    throw new ImageError(
      `The revision's image_uri '${row.image_uri ?? ''}' is not an image reference ` +
        `(<registry host>/<repository>:<tag> or @sha256:<digest>).`,
    );
  if (ref.registry !== config.registry.publicAddress) {
    const source = await foreignSource(
      config.outbound,
      ref.registry,
      `${ref.repository}${ref.digest ? `@${ref.digest}` : `:${ref.tag ?? 'latest'}`}`,
      ref.digest,
    );
    const found = foreignCredential(row, secrets, ref.registry);
    return {
      ...source,
      credentials: found && `${found.username}:${found.password}`,
      masked: found ? credentialForms(found) : [],
    };
  }
  if (deploymentOfRepository(ref.repository) !== row.deployment_id) {
    throw new ImageError(
      `Slipway runs images of the built-in registry only from the deployment's own repositories ` +
        `(${config.registry.publicAddress}/${row.deployment_id}/<name>); ${row.image_uri} is not one.`,
    );
  }
  const internal = new URL(config.registry.internalUrl);
  const digest = row.image_digest ?? ref.digest;
  return {
    reference: `${internal.host}/${ref.repository}${digest ? `@${digest}` : `:${ref.tag ?? 'latest'}`}`,
    digest,
    credentials: `${PLATFORM_ACCOUNT}:${registrySecrets(config).platformPassword}`,
    tlsVerify: internal.protocol === 'https:',
    masked: [],
  };
}

/** The credential for `registry` among the revision's pull secrets; a secret that cannot be used fails the revision. */
function foreignCredential(
  row: RevisionImageRow,
  secrets: readonly SecretEntry[],
  registry: string,
): RegistryCredential | null {
  try {
    return pullCredential(row.resource_spec?.image_pull_secrets ?? [], secrets, registry);
  } catch (err) {
    throw new ImageError((err as Error).message);
  }
}

/** An image of another registry, only where outbound requests may go (credentials: none yet). */
async function foreignSource(
  policy: OutboundPolicy,
  registry: string,
  path: string,
  digest: string | null,
): Promise<ImageSource> {
  const host = registry.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
  const allowed = hostAllowed(host, policy);
  if (!allowed) {
    const addresses = isIP(host) ? [host] : (await lookup(host, { all: true }).catch(() => [])).map((a) => a.address);
    if (!addresses.length) throw new ImageError(`Pulling ${registry}/${path} failed: ${host} does not resolve.`);
    for (const address of addresses) {
      const refusal = addressRefusal(address, policy);
      if (refusal)
        throw new ImageError(
          `Slipway does not pull images from ${registry}: it is ${refusal} ` +
            `(SLIPWAY_OUTBOUND_ALLOW_HOSTS lists hosts that may be reached anyway).`,
        );
    }
  }
  return { reference: `${registry}/${path}`, digest, credentials: null, tlsVerify: !allowed };
}

/**
 * The revision's image, pulled and unpacked unless this machine has it already; `notes` say
 * which. `masked`: the forms of the pull credential of another registry, for every log and message.
 */
export async function revisionImage(
  config: ImageConfigPart,
  images: ImageCache | null,
  row: RevisionImageRow,
  secrets: readonly SecretEntry[] = [],
): Promise<{ image: CachedImage; notes: { line: string; level: 'info' }[]; masked: string[] }> {
  if (!images)
    throw new ImageError(
      'Images run in the embedded container runtime, which needs the sandbox (root, runc, cgroups); this deployer runs without it.',
    );
  const { masked, ...source } = await imageSource(config, row, secrets);
  const image = await images.ensure(source).catch((err: Error) => {
    throw err instanceof ImageError
      ? new ImageError(redactValues(err.message, [...masked, ...secrets.map((s) => s.value)]))
      : err;
  });
  const line = image.pulled
    ? `Pulled and unpacked image ${row.image_uri} (${image.digest}).`
    : `Image ${image.digest} is already unpacked on this machine; no pull.`;
  return { image, notes: [{ line, level: 'info' }], masked };
}
