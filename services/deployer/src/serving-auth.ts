import type { IncomingMessage } from 'node:http';
import { hashApiKey } from '@slipway/crypto';
import { ApiKeyRepository, queryRows, type DataSource } from '@slipway/db';
import { readArtifact, type AccessDenial } from '@slipway/runtime';

/** How long a verdict on a key, or a deployment's policy, is reused: revoking a key takes effect within this. */
const KEY_TTL_MS = 30_000;
const DENIED_KEY_TTL_MS = 5_000;
const POLICY_TTL_MS = 10_000;
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
const WRONG_KEY: AccessDenial = { status: 401, detail: "The 'X-Api-Key' is not a valid API key of this deployment's workspace." };

/**
 * The serving URL's gate (docs/api.md, Deployments): an agent server (the LangGraph Server API
 * serving a project's graphs) answers only requests carrying an API key of the deployment's
 * workspace (or an organization key of its organization) in `X-Api-Key`, as the hosted platform
 * does. A deployment opts out with `source_config.serving_auth: "none"`; a project whose graph
 * config names a custom auth handler (`auth.path`) is left to that handler; an app with its own
 * server authenticates its callers itself. `GET /ok` is always open (it says nothing).
 *
 * Keys are checked against the control plane and the verdict cached briefly. A verified key is
 * removed from the request before it is forwarded: the deployed code never sees the credential.
 */
export class ServingAuth {
  private readonly policies = new Map<string, { policy: Policy; until: number }>();
  private readonly verdicts = new Map<string, { ok: boolean; until: number }>();

  constructor(private readonly dataSource: DataSource) {}

  /** The `authorize` hook of one deployment's serving proxy. */
  forDeployment(deploymentId: string): (req: IncomingMessage) => Promise<AccessDenial | null> {
    return (req) => this.check(deploymentId, req);
  }

  async check(deploymentId: string, req: IncomingMessage): Promise<AccessDenial | null> {
    if ((req.url ?? '').split('?')[0] === '/ok') return null;
    const policy = await this.policy(deploymentId);
    if (!policy?.requireKey) return null;
    const header = req.headers['x-api-key'];
    const key = Array.isArray(header) ? header[0] : header;
    if (!key) return MISSING_KEY;
    if (!(await this.keyAllowed(policy, key))) return WRONG_KEY;
    delete req.headers['x-api-key'];
    return null;
  }

  private async keyAllowed(policy: Policy, key: string): Promise<boolean> {
    const hash = hashApiKey(key);
    const cacheKey = `${policy.workspaceId}:${hash}`;
    const cached = this.verdicts.get(cacheKey);
    if (cached && cached.until > Date.now()) return cached.ok;
    const row = await new ApiKeyRepository(this.dataSource.manager).findActiveByHash(hash);
    // A listener agent's key (docs/api.md, Listener agent protocol) opens nothing but its protocol.
    const ok = !!row && row.listenerId === null && row.organizationId === policy.organizationId && (row.workspaceId === null || row.workspaceId === policy.workspaceId);
    remember(this.verdicts, cacheKey, { ok, until: Date.now() + (ok ? KEY_TTL_MS : DENIED_KEY_TTL_MS) });
    return ok;
  }

  private async policy(deploymentId: string): Promise<Policy | null> {
    const cached = this.policies.get(deploymentId);
    if (cached && cached.until > Date.now()) return cached.policy;
    const [row] = await queryRows<{ workspace_id: string; organization_id: string; serving_auth: string | null; artifact_ref: string | null }>(
      this.dataSource.manager,
      `SELECT d.workspace_id, w.organization_id, d.source_config->>'serving_auth' AS serving_auth, r.artifact_ref
         FROM deployments d JOIN workspaces w ON w.id = d.workspace_id
         LEFT JOIN revisions r ON r.id = d.active_revision_id
        WHERE d.id = $1`,
      [deploymentId],
    );
    if (!row) return null;
    const manifest = row.artifact_ref ? (await readArtifact(row.artifact_ref)).manifest : null;
    const agentServer = manifest?.agent_server;
    const policy: Policy = {
      requireKey: !!agentServer && !agentServer.auth_path && row.serving_auth !== 'none',
      organizationId: row.organization_id,
      workspaceId: row.workspace_id,
    };
    remember(this.policies, deploymentId, { policy, until: Date.now() + POLICY_TTL_MS });
    return policy;
  }
}

function remember<V>(map: Map<string, V>, key: string, value: V): void {
  if (map.size >= MAX_CACHED) map.clear();
  map.set(key, value);
}
