/**
 * Why a revision exists and who made it (docs/api.md, Revisions): `trigger` names the door it
 * came through, `created_by` the caller. Revisions made before these were recorded have neither.
 */
export const REVISION_TRIGGERS = [
  /** The deployment's create. */
  'create',
  /** A PATCH of the deployment (a new ref, secrets, resources, build settings). */
  'patch',
  /** A push to the tracked branch (build_on_push). */
  'push',
  /** A PATCH naming an uploaded source tarball (the deploy CLIs' remote builds). */
  'upload',
  /** A PATCH naming an image pushed to the built-in registry (the deploy CLIs' local builds). */
  'image_push',
  /** A redeploy of an earlier revision (a rollback). */
  'redeploy',
  /** A pull request's preview opened or rolled out. */
  'preview',
  /** POST /v2/deployments/{id}/revisions. */
  'api_revision',
] as const;
export type RevisionTrigger = (typeof REVISION_TRIGGERS)[number];

/** Who made a revision: an API key (its id and description), a user of an identity provider (its subject), or Slipway itself. */
export interface RevisionActor {
  kind: 'api_key' | 'user' | 'system';
  id: string | null;
  name: string | null;
}

/** Slipway acting on its own behalf (a push, a pull request's delivery, the reconciler), with what set it off. */
export const systemActor = (name: string, id: string | null = null): RevisionActor => ({ kind: 'system', id, name });
