import { ListenerRepository, type EntityManager, type Listener } from '@slipway/db';
import { refuseInvalid, resourceSpecProblem, type InputProblem, type ResourceSpec } from '@slipway/domain';
import { podPolicyViolations, type PodPolicy } from '@slipway/runtime';

/** The relaxations a listener's admin granted its deployments (none by default). */
export const podPolicyOf = (listener: Pick<Listener, 'computeConfig'>): PodPolicy =>
  (listener.computeConfig.pod_policy ?? {}) as PodPolicy;

/**
 * The pod policy's 422 issues for a spec that renders to Kubernetes on `listener`: one per refused
 * field, each `loc` pointing into resource_spec (docs/api.md, Errors; docs/operations.md,
 * Kubernetes pod policy).
 */
export function podPolicyIssues(
  listener: Pick<Listener, 'computeConfig'>,
  deploymentName: string,
  spec: ResourceSpec,
): InputProblem[] {
  return podPolicyViolations(spec, deploymentName, podPolicyOf(listener)).map((v) =>
    resourceSpecProblem(v.path, 'pod_policy', `Value error, ${v.message}`),
  );
}

/**
 * What the policy of the deployment's listener refuses in `spec`. Deployments without a listener
 * do not render to Kubernetes and are not checked.
 */
export async function podPolicyIssuesFor(
  manager: EntityManager,
  workspaceId: string,
  listenerId: string | null,
  deploymentName: string,
  spec: ResourceSpec,
): Promise<InputProblem[]> {
  if (!listenerId) return [];
  const listener = await new ListenerRepository(manager).find(workspaceId, listenerId);
  // A deployment's listener cannot go away while the deployment lives (ON DELETE RESTRICT).
  return listener ? podPolicyIssues(listener, deploymentName, spec) : [];
}

/** PATCH: a 422 for a new resource_spec the listener's policy refuses. */
export async function assertPodPolicy(
  manager: EntityManager,
  workspaceId: string,
  listenerId: string | null,
  deploymentName: string,
  spec: ResourceSpec,
): Promise<void> {
  refuseInvalid(await podPolicyIssuesFor(manager, workspaceId, listenerId, deploymentName, spec));
}
