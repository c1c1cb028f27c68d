import { Foundation1763700000000 } from './1763700000000-foundation.js';
import { DeploymentsPipeline1763800000000 } from './1763800000000-deployments-pipeline.js';
import { CodeDeploys1763900000000 } from './1763900000000-code-deploys.js';

/**
 * Append-only: never edit a migration that has shipped; add a new one at the end.
 * Listed explicitly so the order is the array order, not a glob's.
 */
export const MIGRATIONS = [Foundation1763700000000, DeploymentsPipeline1763800000000, CodeDeploys1763900000000];
