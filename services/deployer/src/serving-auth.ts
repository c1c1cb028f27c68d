import type { IncomingMessage } from 'node:http';
import {
  addressKey,
  credentialId,
  credentialOf,
  credentialsIn,
  SlipwayCredentials,
  stripCredential,
  stripOnly,
  type ApiKeyCache,
  type RateLimits,
} from '@slipway/access';
import type { ApiKey, DataSource } from '@slipway/db';
import { TooManyRequestsError } from '@slipway/domain';
import { RevisionReads } from '@slipway/pipeline';
import { clientAddress, readArtifact, type AccessDenial } from '@slipway/runtime';

/** How long a deployment's policy is reused: a change of `serving_auth` takes effect within this. */
const POLICY_TTL_MS = 10_000;
/** After a failed re-read, how long the last policy read is kept before the next try. */
const POLICY_RETRY_MS = 1_000;
const MAX_CACHED = 10_000;

/** Who may call a deployment's serving URL. */
interface Policy {
  /** A workspace API key in X-Api-Key is required. */
  requireKey: boolean;
  organizationId: string;
  workspaceId: string;
}

const MISSING_KEY: AccessDenial = {
  status: 401,
  detail: "This deployment requires an API key of its workspace in the 'X-Api-Key' header.",
  headers: { 'www-authenticate': 'ApiKey header="X-Api-Key"' },
};
const WRONG_KEY: AccessDenial = {
  status: 401,
  detail: "The 'X-Api-Key' is not a valid API key of this deployment's workspace.",
};

export interface ServingAuthDeps {
  dataSource: DataSource;
  /** The api's key lookup, with its cache of at most a second: a revoked key is refused within it. */
  keys: ApiKeyCache;
  /** The api's budgets and failed-authentication lockout, counted in the same Redis. */
  limits: RateLimits;
}

/**
 * The serving URL's gate (docs/api.md, Deployments): an agent server (the LangGraph Server API
 * serving a project's graphs) answers only requests carrying an API key of the deployment's
 * workspace (or an organization key of its organization) in `X-Api-Key` (or `Authorization:
 * Bearer`), as the hosted platform does. A deployment opts out with `source_config.serving_auth:
 * "none"` (admins only); a project whose graph config names a custom auth handler (`auth.path`)
 * is left to that handler; an app with its own server authenticates its callers itself. A plain
 * `GET /ok` (no Upgrade) is always open and free: it says nothing. A browser's CORS preflight
 * (`OPTIONS` with `Origin` and `Access-Control-Request-Method`, no Upgrade) carries no credential
 * by design: it goes through without a key, charged to the client address, so the app answers
 * its CORS policy and a browser page (LangGraph Studio, the console) can then send the keyed request.
 *
 * Every request is checked on its own, keep-alive or not, Upgrade included, exactly as the api
 * checks one: the credential's lockout first, then the key (cached at most a second, so a revoke
 * applies here within it), a failure counted against the credential and the client address, the
 * request charged to the key's budget (the same one its api calls draw on), or to the address
 * without a key. The deployed code never sees the credential: it is removed from the request,
 * and a Slipway key sent to a deployment that needs none is removed as well.
 */
export class ServingAuth {
  private readonly policies = new Map<
    string,
    { policy: Promise<Policy | null>; until: number; last?: Policy | null }
  >();
  private readonly slipwayCredentials: SlipwayCredentials;

  constructor(private readonly deps: ServingAuthDeps) {
    this.slipwayCredentials = new SlipwayCredentials(deps.dataSource);
  }

  /** The `authorize` hook of one deployment's serving proxy. */
  forDeployment(deploymentId: string): (req: IncomingMessage) => Promise<AccessDenial | null> {
    return (req) => this.check(deploymentId, req);
  }

  async check(deploymentId: string, req: IncomingMessage): Promise<AccessDenial | null> {
    try {
      return await this.decide(deploymentId, req);
    } catch (err) {
      if (err instanceof TooManyRequestsError)
        return { status: 429, detail: err.message, headers: { 'retry-after': String(err.retryAfterSeconds) } };
      throw err;
    }
  }

  private async decide(deploymentId: string, req: IncomingMessage): Promise<AccessDenial | null> {
    if (isPublicProbe(req)) return null;
    const policy = await this.policy(deploymentId);
    const credential = credentialOf(req.headers);
    if (!policy?.requireKey) {
      await this.stripSlipwayKeys(req);
      return null;
    }
    const address = addressKey(clientAddress(req));
    if (isCorsPreflight(req)) {
      await this.deps.limits.consume('address', address);
      await this.stripSlipwayKeys(req);
      return null;
    }
    if (!credential) {
      await this.deps.limits.consume('address', address);
      return MISSING_KEY;
    }
    // An API key's credential id is its stored hash: one digest serves the lockout and the lookup.
    const id = credentialId(credential);
    await this.deps.limits.assertCredentialNotLockedOut(id);
    const row = await this.deps.keys.find(id);
    if (!row) {
      const lockout = await this.deps.limits.recordAuthFailure(address, id);
      if (lockout) throw lockout;
      return WRONG_KEY;
    }
    this.deps.keys.touch(row.id);
    await this.deps.limits.consume(row.listenerId ? 'listener-agent' : 'key', row.id);
    if (!opens(row, policy)) return WRONG_KEY;
    stripCredential(req.headers, credential);
    return null;
  }

  /**
   * A deployment that needs no key still never sees one: every value in `X-Api-Key` or
   * `Authorization: Bearer` that authenticates to Slipway (a `slw_` key, or an operator-chosen
   * bootstrap key without the prefix) is removed; an app's own credentials stay untouched.
   */
  private async stripSlipwayKeys(req: IncomingMessage): Promise<void> {
    for (const credential of credentialsIn(req.headers))
      if (await this.slipwayCredentials.isSlipwayKey(credential)) stripOnly(req.headers, credential);
  }

  /**
   * The deployment's policy, read at most once per POLICY_TTL_MS: concurrent requests while it
   * is read share the one read (a burst of new connections is one query, not one each). A
   * re-read that fails (Postgres slow or away) keeps the policy last read, tried again after
   * POLICY_RETRY_MS: a serving deployment keeps serving under its known rules rather than
   * answering 503 to everyone while a refresh fails. Only a policy never read fails the request.
   */
  private policy(deploymentId: string): Promise<Policy | null> {
    const cached = this.policies.get(deploymentId);
    if (cached && cached.until > Date.now()) return cached.policy;
    if (this.policies.size >= MAX_CACHED) this.policies.clear();
    const known = cached && 'last' in cached ? { policy: cached.last! } : null;
    const read = this.readPolicy(deploymentId);
    const entry: { policy: Promise<Policy | null>; until: number; last?: Policy | null } = {
      policy: known ? read.catch(() => known.policy) : read,
      until: Infinity,
      ...(known ? { last: known.policy } : {}),
    };
    this.policies.set(deploymentId, entry);
    read.then(
      (policy) => {
        entry.last = policy;
        entry.until = Date.now() + POLICY_TTL_MS;
      },
      () => {
        if (known) entry.until = Date.now() + POLICY_RETRY_MS;
        else if (this.policies.get(deploymentId) === entry) this.policies.delete(deploymentId);
      },
    );
    return entry.policy;
  }

  private async readPolicy(deploymentId: string): Promise<Policy | null> {
    const row = await new RevisionReads(this.deps.dataSource.manager).servingOf(deploymentId);
    if (!row) return null;
    // A built revision's artifact says it; an image revision's rollout recorded it (every
    // internal_docker image is one, even one rolled out before that was recorded).
    const agentServer = row.artifact_ref
      ? (await readArtifact(row.artifact_ref)).manifest.agent_server
      : row.agent_server || row.source === 'internal_docker'
        ? { auth_path: row.agent_server_auth_path }
        : null;
    return {
      requireKey: !!agentServer && !agentServer.auth_path && row.serving_auth !== 'none',
      organizationId: row.organization_id,
      workspaceId: row.workspace_id,
    };
  }
}

/** A key of the deployment's workspace, or of its organization; a listener agent's key opens nothing but its protocol. */
function opens(key: ApiKey, policy: Policy): boolean {
  return (
    key.listenerId === null &&
    key.organizationId === policy.organizationId &&
    (key.workspaceId === null || key.workspaceId === policy.workspaceId)
  );
}

/** No Upgrade asked for: the request cannot turn the connection into a tunnel. */
function noUpgrade(req: IncomingMessage): boolean {
  return req.headers.upgrade === undefined && !/(^|,)\s*upgrade\s*(,|$)/i.test(String(req.headers.connection ?? ''));
}

/** A browser's CORS preflight: `OPTIONS` with `Origin` and `Access-Control-Request-Method`, no Upgrade. */
function isCorsPreflight(req: IncomingMessage): boolean {
  return (
    req.method === 'OPTIONS' &&
    typeof req.headers.origin === 'string' &&
    typeof req.headers['access-control-request-method'] === 'string' &&
    noUpgrade(req)
  );
}

/** `GET /ok` as a health check sends it: no Upgrade, so it cannot turn the connection into a tunnel. */
function isPublicProbe(req: IncomingMessage): boolean {
  if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/ok') return false;
  return noUpgrade(req);
}
