import type { LaunchSpec, StartInstancesInput } from '@slipway/runtime';

/** What every launch of the revision's instances shares (the index and restart fields aside). */
export function launchSpec(input: StartInstancesInput): Omit<LaunchSpec, 'index' | 'existing'> {
  return {
    deploymentId: input.deploymentId,
    revisionId: input.revisionId,
    artifact: input.artifact,
    env: input.env,
    limits: input.limits,
    frontPorts: input.frontPorts,
    image: input.image,
  };
}
