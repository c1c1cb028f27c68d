/**
 * Checks of deployment writes against what is stored (docs/api.md, Deployments): listeners,
 * tracing-project names, what a PATCH may change. Each throws the 4xx that applies.
 */
import {
  ListenerRepository,
  type Deployment,
  type EntityManager,
  type Listener,
  type StoredSourceConfig,
} from '@slipway/db';
import {
  BadRequestError,
  canonicalSource,
  ConflictError,
  IMMUTABLE_SOURCE_CONFIG_FIELDS,
  NotFoundError,
  patchImageProblems,
  refuseInvalid,
  UnprocessableError,
  type ResourceSpec,
} from '@slipway/domain';
import type { PatchDeploymentBody } from '../schemas/deployment.schema.js';
import { podPolicyIssues } from './pod-policy-check.js';

/** external_container without a listener runs on the embedded runtime, which only a workspace without listeners uses. */
export async function assertNoListeners(manager: EntityManager, workspaceId: string): Promise<void> {
  const ids = await new ListenerRepository(manager).idsOfWorkspace(workspaceId);
  if (ids.length)
    throw new BadRequestError(
      `'source_config.listener_id' is required for workspace with available listener IDs: [${ids.join(', ')}]`,
    );
}

/**
 * The listener a create names, as the deployment's insert read it (null: no listener of this
 * workspace has that id): it must exist, serve the namespace, and its pod policy allow the spec.
 */
export function assertListenerServes(
  listener: Pick<Listener, 'computeConfig'> | null,
  config: StoredSourceConfig,
  name: string,
  spec: ResourceSpec,
): void {
  const id = config.listener_id!;
  if (!listener) throw NotFoundError.of('Listener', id);
  const namespace = config.listener_config?.k8s_namespace;
  const allowed = listener.computeConfig.k8s_namespaces;
  if (namespace && allowed && !allowed.includes(namespace)) {
    throw new BadRequestError(
      `Namespace '${namespace}' is not one of listener ${id}'s namespaces (${allowed.join(', ') || 'none'}).`,
    );
  }
  refuseInvalid(podPolicyIssues(listener, name, spec));
}

export function nameTaken(name: string, workspaceId: string): ConflictError {
  return new ConflictError(
    `A deployment or tracing project named '${name}' already exists in workspace ID '${workspaceId}'.`,
  );
}

/**
 * What a PATCH of the (locked) deployment may not do, first refusal first: change a deployment
 * being deleted or an immutable field (400), name an image for a deployment that runs none.
 */
export function assertPatchable(deployment: Deployment, body: PatchDeploymentBody): void {
  if (deployment.status === 'AWAITING_DELETE') {
    throw new BadRequestError(`Deployment ID ${deployment.id} is being deleted and can no longer be changed.`);
  }
  assertImmutables(deployment, body);
  if (
    body.revision_source != null &&
    canonicalSource(body.revision_source) === 'internal_docker' &&
    deployment.source !== 'internal_docker'
  ) {
    throw new BadRequestError(
      `revision_source 'internal_docker' is only for internal_docker deployments; this one's source is ${deployment.source}.`,
    );
  }
  // The cross-source rule of create holds for later revisions too: only images carry an image_uri.
  refuseInvalid(patchImageProblems(deployment.source, body.source_revision_config?.image_uri));
  if (body.source_config?.previews != null && (deployment.source !== 'repohost' || deployment.previewOf !== null)) {
    throw new UnprocessableError(
      'source_config.previews is only for repohost deployments that are not previews themselves.',
    );
  }
}

/** docs/api.md, Deployments: changing an immutable field is a 400 naming it; repeating its value is fine. */
function assertImmutables(deployment: Deployment, body: PatchDeploymentBody): void {
  const changed = (field: string) => {
    throw new BadRequestError(`${field} cannot be changed after the deployment is created.`);
  };
  if (body.name != null && body.name !== deployment.name) changed('name');
  if (body.source != null && canonicalSource(body.source) !== deployment.source) changed('source');
  const input = body.source_config ?? {};
  for (const field of IMMUTABLE_SOURCE_CONFIG_FIELDS) {
    const given = input[field];
    if (given == null) continue;
    const stored = deployment.sourceConfig[field] ?? null;
    if (JSON.stringify(given) !== JSON.stringify(stored)) changed(`source_config.${field}`);
  }
  const type = body.deployment_type ?? input.deployment_type;
  if (type != null && type !== deployment.deploymentType) changed('deployment_type');
}
