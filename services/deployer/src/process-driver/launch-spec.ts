import type { InstanceRole, LaunchSpec, StartInstancesInput } from '@slipway/runtime';

/**
 * The variable that tells an agent server process its role when the revision has queue workers:
 * `api` (serves, runs no graphs) or `queue` (runs graphs, serves only its health probe).
 */
export const ROLE_VARIABLE = 'SLIPWAY_AGENT_SERVER_ROLE';

/** What every launch of the revision's instances of `role` shares (the index and restart fields aside). */
export function launchSpec(
  input: StartInstancesInput,
  role: InstanceRole = 'api',
): Omit<LaunchSpec, 'index' | 'existing'> {
  return {
    deploymentId: input.deploymentId,
    revisionId: input.revisionId,
    role,
    artifact: input.artifact,
    env: input.queue ? { ...input.env, [ROLE_VARIABLE]: role } : input.env,
    limits: role === 'queue' && input.queue ? input.queue.limits : input.limits,
    frontPorts: input.frontPorts,
    image: input.image,
  };
}
