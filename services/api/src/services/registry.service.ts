import { createHash, randomBytes, randomUUID, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { Config } from '@slipway/config';
import { DeploymentRepository, RegistryRepository, type DataSource, type PushedBlob } from '@slipway/db';
import {
  BadRequestError,
  NotFoundError,
  RequestValidationError,
  UnauthorizedError,
  UnavailableError,
  valueError,
} from '@slipway/domain';
import {
  deploymentOfRepository,
  parseImageReference,
  RegistryClient,
  RegistryUnavailableError,
  loadOrCreateSigningKey,
  parseScopes,
  PLATFORM_ACCOUNT,
  REGISTRY_SERVICE,
  registrySecrets,
  repositoryPrefix,
  signRegistryToken,
  type RegistryAccess,
  type RegistryAction,
  type RegistrySecrets,
} from '@slipway/registry';
import type { QuotaService } from './quota.service.js';

/** The user name `docker login -u oauth2accesstoken --password-stdin` sends with a push token. */
export const PUSH_TOKEN_ACCOUNT = 'oauth2accesstoken';
const PUSH_TOKEN_PREFIX = 'slwr_';
/** `Retry-After` of the 503 a PATCH gets while the registry does not answer (the supervisor restarts it within seconds). */
const REGISTRY_RETRY_AFTER_SECONDS = 5;
const NOT_INTERNAL_DOCKER = "Push tokens are only available for 'internal_docker' source deployments";
/**
 * Life of a registry token granting `push`. distribution cannot refuse a push by size (its
 * notifications come after the fact), so the quota is enforced at the token endpoint: clients
 * fetch a new token once theirs expires, and each request is checked against the quota again.
 * The window a token gives past the quota is this long (docs/operations.md, Per-tenant bounds).
 */
export const PUSH_GRANT_TTL_SECONDS = 60;

export interface PushTokenView {
  token: string;
  registry_url: string;
  expires_at: string;
}

export interface RegistryTokenView {
  token: string;
  access_token: string;
  expires_in: number;
  issued_at: string;
}

/** Who a registry token request authenticated as. */
type Caller = { kind: 'deployment'; deploymentId: string; workspaceId: string; expiresAt: Date } | { kind: 'platform' };

const hashOf = (token: string) => createHash('sha256').update(token).digest();
const sameSecret = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** `Basic base64(user:password)` → its parts; null when it is not one. */
function basicCredentials(header: string | undefined): { user: string; password: string } | null {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!match) return null;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? null : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * Slipway as the built-in registry's token issuer (docs/api.md, Images and the built-in
 * registry): push tokens per deployment, the registry's token endpoint that turns them (or the
 * platform's own credential) into registry tokens, and the registry's push events, from which
 * the bytes each workspace keeps there are counted.
 */
export class RegistryService {
  private signingKey: KeyObject | null = null;
  private client: RegistryClient | null = null;
  private readonly secrets: RegistrySecrets;

  constructor(
    private readonly dataSource: DataSource,
    private readonly config: Pick<Config, 'registry' | 'secretsKey'>,
    private readonly quotas: QuotaService,
  ) {
    this.secrets = registrySecrets(config);
  }

  /** The token-signing key, read (or created) on first use. */
  key(): KeyObject {
    this.signingKey ??= loadOrCreateSigningKey(this.config.registry.signingKeyFile);
    return this.signingKey;
  }

  /** `registry_url` of a deployment: where its images are pushed, `<host:port>/<prefix>`. */
  registryUrl(deploymentId: string): string {
    return `${this.config.registry.publicAddress}/${repositoryPrefix(deploymentId)}`;
  }

  async issuePushToken(workspaceId: string, deploymentId: string): Promise<PushTokenView> {
    const deployment = await new DeploymentRepository(this.dataSource.manager).find(workspaceId, deploymentId);
    if (!deployment) throw NotFoundError.of('Deployment', deploymentId);
    if (deployment.source !== 'internal_docker') throw new BadRequestError(NOT_INTERNAL_DOCKER);
    if (deployment.status === 'AWAITING_DELETE')
      throw new BadRequestError(`Deployment ID ${deploymentId} is being deleted.`);
    const token = `${PUSH_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    const expiresAt = new Date(Date.now() + this.config.registry.pushTokenTtlSeconds * 1000);
    await new RegistryRepository(this.dataSource.manager).insertPushToken(
      randomUUID(),
      deploymentId,
      hashOf(token),
      expiresAt,
    );
    return { token, registry_url: this.registryUrl(deploymentId), expires_at: expiresAt.toISOString() };
  }

  /**
   * The registry's token endpoint: a registry token granting of the requested scopes only what
   * the caller may have. A push token: pull and push of its deployment's repositories (push
   * only while the workspace is under its `registry_bytes` quota); the platform: pull of any
   * repository. No scope (`docker login`) gets a token granting nothing. A token granting push
   * lives PUSH_GRANT_TTL_SECONDS at most, so the quota is checked again that often during a push.
   */
  async exchange(
    authorization: string | undefined,
    service: string | undefined,
    scopes: readonly string[],
  ): Promise<RegistryTokenView> {
    if (service !== undefined && service !== REGISTRY_SERVICE)
      throw new BadRequestError(`Unknown service '${service}'; this issuer signs for '${REGISTRY_SERVICE}'.`);
    const caller = await this.authenticate(authorization);
    const access: RegistryAccess[] = [];
    for (const scope of parseScopes(scopes)) {
      if (scope.type !== 'repository') continue;
      const allowed = this.allowedActions(caller, scope.name);
      const actions = [...new Set(scope.actions)].filter((a): a is RegistryAction =>
        allowed.includes(a as RegistryAction),
      );
      if (actions.length) access.push({ type: 'repository', name: scope.name, actions });
    }
    if (caller.kind === 'deployment' && access.some((a) => a.actions.includes('push'))) {
      await this.quotas.assertRegistryRoom(this.dataSource.manager, caller.workspaceId);
    }
    const subject = caller.kind === 'platform' ? PLATFORM_ACCOUNT : `deployment:${caller.deploymentId}`;
    // Never outlives the push token it was exchanged for.
    const left = caller.kind === 'deployment' ? Math.floor((caller.expiresAt.getTime() - Date.now()) / 1000) : Infinity;
    const pushes = access.some((a) => a.actions.includes('push'));
    const ttlSeconds = Math.max(
      1,
      Math.min(this.config.registry.tokenTtlSeconds, pushes ? PUSH_GRANT_TTL_SECONDS : Infinity, left),
    );
    const signed = signRegistryToken(this.key(), { subject, access, ttlSeconds });
    return {
      token: signed.token,
      access_token: signed.token,
      expires_in: signed.expiresIn,
      issued_at: signed.issuedAt.toISOString(),
    };
  }

  /**
   * An `external_container` revision may name the built-in registry only in its deployment's own
   * repositories: the deployer pulls there with the platform's credential, which reads every
   * repository, so it refuses any other. Refused here as a 422 naming `image_uri`, rather than
   * as a DEPLOY_FAILED after the revision was made. Other registries are not this check's concern.
   */
  assertOwnImage(deploymentId: string, imageUri: string): void {
    const ref = parseImageReference(imageUri);
    if (
      !ref ||
      ref.registry !== this.config.registry.publicAddress ||
      deploymentOfRepository(ref.repository) === deploymentId
    )
      return;
    throw new RequestValidationError([
      valueError(
        ['source_revision_config', 'image_uri'],
        `names another deployment's repository of the built-in registry (${ref.registry}); ` +
          `images pushed there run only in the internal_docker deployment they were pushed to`,
      ),
    ]);
  }

  /**
   * The digest an `internal_docker` revision will run: `imageUri` must name an image of the
   * deployment's own repositories by tag or digest, and the registry must have it (else 422
   * naming `image_uri`). Returns the digest and the reference pinned to it. A registry that does
   * not answer is a 503 with `Retry-After`: the caller's transaction rolls back, so the PATCH
   * changed nothing (not its secrets or resource_spec either) and may be sent again as it was.
   */
  async resolveImage(deploymentId: string, imageUri: string): Promise<{ digest: string; imageUri: string }> {
    const refuse = (why: string) =>
      new RequestValidationError([valueError(['source_revision_config', 'image_uri'], why)]);
    const ref = parseImageReference(imageUri);
    const prefix = this.registryUrl(deploymentId);
    if (
      !ref ||
      ref.registry !== this.config.registry.publicAddress ||
      deploymentOfRepository(ref.repository) !== deploymentId
    ) {
      throw refuse(
        `image_uri must name an image pushed to this deployment's registry_url: ${prefix}/<name>:<tag> or ${prefix}/<name>@sha256:<digest>`,
      );
    }
    this.client ??= new RegistryClient(this.config.registry.internalUrl, this.key());
    let digest: string | null;
    try {
      digest = await this.client.resolve(ref.repository, ref.digest ?? ref.tag!);
    } catch (err) {
      if (err instanceof RegistryUnavailableError) {
        throw new UnavailableError(
          `The built-in image registry is unavailable, so image_uri could not be resolved to a digest; ` +
            `nothing was changed. Retry once it is back. (${err.message})`,
          REGISTRY_RETRY_AFTER_SECONDS,
        );
      }
      throw err;
    }
    if (!digest || (ref.digest && digest !== ref.digest)) {
      throw refuse(
        `image ${imageUri} is not in the registry; push it first (POST /v2/deployments/${deploymentId}/push-token)`,
      );
    }
    return { digest, imageUri: `${ref.registry}/${ref.repository}@${digest}` };
  }

  /** The registry's push events (authenticated by the bearer token its configuration carries): blobs counted per workspace. */
  async recordEvents(authorization: string | undefined, body: { events?: unknown }): Promise<number> {
    if (!sameSecret(authorization ?? '', `Bearer ${this.secrets.eventsToken}`))
      throw new UnauthorizedError('Invalid registry event credential.');
    const blobs: PushedBlob[] = [];
    for (const event of Array.isArray(body.events) ? body.events : []) {
      const { action, target } = (event ?? {}) as { action?: unknown; target?: Record<string, unknown> };
      if ((action !== 'push' && action !== 'mount') || !target) continue;
      const repository = String(target.repository ?? '');
      const digest = String(target.digest ?? '');
      const size = Number(target.size ?? target.length);
      const deploymentId = deploymentOfRepository(repository);
      if (!deploymentId || !/^sha256:[0-9a-f]{64}$/.test(digest) || !Number.isSafeInteger(size) || size < 0) continue;
      blobs.push({ repository, digest, deploymentId, sizeBytes: size });
    }
    await new RegistryRepository(this.dataSource.manager).recordBlobs(blobs);
    return blobs.length;
  }

  private async authenticate(authorization: string | undefined): Promise<Caller> {
    const credentials = basicCredentials(authorization);
    if (!credentials)
      throw new UnauthorizedError('Registry tokens need Basic credentials: oauth2accesstoken and a push token.');
    if (credentials.user === PLATFORM_ACCOUNT && sameSecret(credentials.password, this.secrets.platformPassword))
      return { kind: 'platform' };
    if (credentials.user === PUSH_TOKEN_ACCOUNT && credentials.password.startsWith(PUSH_TOKEN_PREFIX)) {
      const grant = await new RegistryRepository(this.dataSource.manager).grantOf(hashOf(credentials.password.trim()));
      if (grant) return { kind: 'deployment', ...grant };
    }
    throw new UnauthorizedError('Invalid, expired or revoked push token.');
  }

  private allowedActions(caller: Caller, repository: string): RegistryAction[] {
    if (caller.kind === 'platform') return ['pull'];
    return deploymentOfRepository(repository) === caller.deploymentId ? ['pull', 'push'] : [];
  }
}
