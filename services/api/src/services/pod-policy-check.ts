import { ListenerRepository, type EntityManager, type Listener } from '@slipway/db';
import type { ResourceSpec } from '@slipway/domain';
import { podPolicyViolations, type PodPolicy } from '@slipway/runtime';
import { RequestValidationError, type ValidationIssue } from '../http/validation-error.js';

/** Where a deployment's resource_spec sits in a create or PATCH body. */
export const RESOURCE_SPEC_LOC = ['body', 'source_config', 'resource_spec'] as const;

/** The relaxations a listener's admin granted its deployments (none by default). */
export const podPolicyOf = (listener: Pick<Listener, 'computeConfig'>): PodPolicy => (listener.computeConfig.pod_policy ?? {}) as PodPolicy;

/**
 * The pod policy's 422 issues for a spec that renders to Kubernetes on `listener`: one per refused
 * field, each `loc` pointing into resource_spec (docs/api.md, Errors; docs/operations.md,
 * Kubernetes pod policy).
 */
export function podPolicyIssues(listener: Pick<Listener, 'computeConfig'>, deploymentName: string, spec: ResourceSpec): ValidationIssue[] {
  return podPolicyViolations(spec, deploymentName, podPolicyOf(listener)).map((v) => ({
    loc: [...RESOURCE_SPEC_LOC, ...v.path],
    msg: `Value error, ${v.message}`,
    type: 'pod_policy',
  }));
}

/**
 * What the policy of the deployment's listener refuses in `spec`. Deployments without a listener
 * do not render to Kubernetes and are not checked.
 */
export async function podPolicyIssuesFor(manager: EntityManager, workspaceId: string, listenerId: string | null, deploymentName: string, spec: ResourceSpec): Promise<ValidationIssue[]> {
  if (!listenerId) return [];
  const listener = await new ListenerRepository(manager).find(workspaceId, listenerId);
  // A deployment's listener cannot go away while the deployment lives (ON DELETE RESTRICT).
  return listener ? podPolicyIssues(listener, deploymentName, spec) : [];
}

/** PATCH: a 422 for a new resource_spec the listener's policy refuses. */
export async function assertPodPolicy(manager: EntityManager, workspaceId: string, listenerId: string | null, deploymentName: string, spec: ResourceSpec): Promise<void> {
  const issues = await podPolicyIssuesFor(manager, workspaceId, listenerId, deploymentName, spec);
  if (issues.length) throw new RequestValidationError(issues);
}
