import type { ApiKeyRole, ApiKeyScope } from '@slipway/db';

/** Who is calling, and in which tenant. Built once per request by the authenticator. */
export interface Principal {
  kind: 'api_key' | 'jwt';
  /** The API key's id, or null for a JWT. */
  keyId: string | null;
  /** The JWT `sub`, or `api-key:<id>`. */
  subject: string;
  organizationId: string;
  /** How the credential itself is scoped. */
  scope: ApiKeyScope;
  role: ApiKeyRole;
  /** The workspace this request acts in: the key's own, or the validated `X-Tenant-Id`. */
  workspaceId: string | null;
  /** Set for a listener agent's key (docs/api.md, Listener agent protocol). */
  listenerId: string | null;
  /** How it is shown as an actor: the key's description, or the token's `name` (else its `email`). */
  name: string | null;
}

/** Which credentials a route accepts. */
export type AuthRequirement =
  /** No credentials (health, docs, signed webhooks and uploads). */
  | 'none'
  /**
   * Health probes: no credentials and never charged to any budget. A credential, when sent, is
   * identified (a bad one refused and counted as a failed authentication), so the handler can
   * answer an admin more than an anonymous prober.
   */
  | 'probe'
  /** Any non-agent credential; no workspace needed (organization-level resources). */
  | 'organization'
  /** A non-agent credential acting in a workspace. */
  | 'workspace'
  /** Only a listener agent's key, for its own listener. */
  | 'listener-agent';

/**
 * Which role a route needs: `true` any admin (of the workspace it acts in, or of the
 * organization); `'organization'` an admin of the whole organization, i.e. an organization-scoped
 * admin key or a JWT with `role: admin` and no `tenant_id` (docs/api.md, Authentication and tenancy).
 */
export type AdminRequirement = boolean | 'organization';

/** True for an admin of the whole organization (not only of one workspace). */
export function isOrganizationAdmin(principal: Principal): boolean {
  return principal.role === 'admin' && principal.scope === 'organization';
}
