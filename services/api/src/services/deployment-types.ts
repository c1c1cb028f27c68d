/** The shapes DeploymentService works with and the ports it is given (docs/api.md, Deployments). */
import type { StoredRevisionConfig, StoredSourceConfig } from '@slipway/db';
import type {
  DeploymentSource,
  DeploymentType,
  ResourceSpec,
  RevisionActor,
  RevisionTrigger,
  SecretEntry,
} from '@slipway/domain';

/** Where `internal_docker` image references are resolved to the digest a revision runs (RegistryService). */
export interface ImageResolver {
  resolveImage(deploymentId: string, imageUri: string): Promise<{ digest: string; imageUri: string }>;
  /** Refuses (422) an external_container image in another deployment's repository of the built-in registry. */
  assertOwnImage(deploymentId: string, imageUri: string): void;
}

/** What a new revision is made of; everything is snapshotted so the revision never changes. */
export interface RevisionDraft {
  /** Why the revision exists (docs/api.md, Revisions). */
  trigger: RevisionTrigger;
  /** Who made it; unset: the request's caller (request-actor.ts), else Slipway. */
  createdBy?: RevisionActor;
  source: DeploymentSource;
  sourceRevisionConfig: StoredRevisionConfig;
  resourceSpec: ResourceSpec;
  secrets: SecretEntry[];
  buildConfig: { install_command: string | null; build_command: string | null };
  redeployedFrom?: string | null;
  artifactRef?: string | null;
  imageUri?: string | null;
  /** internal_docker: the manifest digest the revision runs. */
  imageDigest?: string | null;
}

/**
 * Where create finds a repohost deployment's repository (C4): the integration must be one of
 * the workspace's (else 404) and list `repoUrl` (else 400). IntegrationService in the app.
 */
export interface RepositoryCatalog {
  findRepository(workspaceId: string, integrationId: string, repoUrl: string): Promise<{ default_branch: string }>;
}

/** A create request checked outside any transaction (`prepareCreate`), ready to be written. */
export interface CreateDraft {
  source: DeploymentSource;
  type: DeploymentType | null;
  resourceSpec: ResourceSpec;
  revisionConfig: StoredRevisionConfig | null;
  sourceConfig: StoredSourceConfig;
}
