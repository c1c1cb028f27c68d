import type { DeploymentType } from './deployment-rules.js';
import { resourceSpecProblem, type InputProblem } from './input-problems.js';

/** CPU in cores (fractions allowed), memory in MB: the numeric part of a resource spec. */
export interface ResourceSpec {
  min_scale: number;
  max_scale: number;
  cpu: number;
  cpu_limit: number;
  memory_mb: number;
  memory_limit_mb: number;
  /**
   * Separate queue-worker processes run the graphs (`queue_*` sizes them) and the API instances
   * only serve; false: every instance serves and runs graphs (single-host mode). Defaults to
   * whether `queue_min_scale` was given.
   */
  queue_enabled: boolean;
  queue_min_scale: number;
  queue_max_scale: number;
  queue_cpu: number;
  queue_cpu_limit: number;
  queue_memory_mb: number;
  queue_memory_limit_mb: number;
  orchestrator_cpu: number;
  orchestrator_cpu_limit: number;
  orchestrator_memory_mb: number;
  orchestrator_memory_limit_mb: number;
  redis_memory_mb: number;
  db_cpu: number;
  db_cpu_limit: number;
  db_memory_mb: number;
  db_memory_limit_mb: number;
  db_storage_gi: number;
  db_max_connections: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  service_account_name: string | null;
  image_pull_secrets: Array<{ name: string }>;
  volumes: Array<Record<string, any>>;
  volume_mounts: Array<Record<string, any>>;
  init_containers: Array<Record<string, any>>;
  sidecars: Array<Record<string, any>>;
}

export type ResourceSpecInput = Partial<ResourceSpec>;

interface TypeDefaults {
  cpu: number;
  memory_mb: number;
  min_scale: number;
  max_scale: number;
}

/** Defaults by deployment type (docs/api.md, Deployments); self-hosted deployments (no type) get `dev`'s. */
export const RESOURCE_DEFAULTS: Readonly<Record<DeploymentType, TypeDefaults>> = {
  dev_free: { cpu: 0.5, memory_mb: 512, min_scale: 1, max_scale: 1 },
  dev: { cpu: 1, memory_mb: 1024, min_scale: 1, max_scale: 1 },
  prod: { cpu: 2, memory_mb: 2048, min_scale: 2, max_scale: 10 },
};

/**
 * Fills every field a caller left out: API values from the deployment type, limits at twice
 * the request, queue workers like the API workers, and small fixed sizes for the rest.
 */
export function resolveResourceSpec(input: ResourceSpecInput, type: DeploymentType | null): ResourceSpec {
  const d = RESOURCE_DEFAULTS[type ?? 'dev'];
  const cpu = input.cpu ?? d.cpu;
  const memory = input.memory_mb ?? d.memory_mb;
  const minScale = input.min_scale ?? d.min_scale;
  const maxScale = input.max_scale ?? Math.max(d.max_scale, minScale);
  const queueCpu = input.queue_cpu ?? cpu;
  const queueMemory = input.queue_memory_mb ?? memory;
  const queueMin = input.queue_min_scale ?? minScale;
  const orchestratorCpu = input.orchestrator_cpu ?? 0.5;
  const orchestratorMemory = input.orchestrator_memory_mb ?? 512;
  const dbCpu = input.db_cpu ?? 0.5;
  const dbMemory = input.db_memory_mb ?? 1024;
  return {
    min_scale: minScale,
    max_scale: maxScale,
    cpu,
    cpu_limit: input.cpu_limit ?? cpu * 2,
    memory_mb: memory,
    memory_limit_mb: input.memory_limit_mb ?? memory * 2,
    queue_enabled: input.queue_enabled ?? input.queue_min_scale != null,
    queue_min_scale: queueMin,
    queue_max_scale: input.queue_max_scale ?? Math.max(input.max_scale ?? d.max_scale, queueMin),
    queue_cpu: queueCpu,
    queue_cpu_limit: input.queue_cpu_limit ?? queueCpu * 2,
    queue_memory_mb: queueMemory,
    queue_memory_limit_mb: input.queue_memory_limit_mb ?? queueMemory * 2,
    orchestrator_cpu: orchestratorCpu,
    orchestrator_cpu_limit: input.orchestrator_cpu_limit ?? orchestratorCpu * 2,
    orchestrator_memory_mb: orchestratorMemory,
    orchestrator_memory_limit_mb: input.orchestrator_memory_limit_mb ?? orchestratorMemory * 2,
    redis_memory_mb: input.redis_memory_mb ?? 256,
    db_cpu: dbCpu,
    db_cpu_limit: input.db_cpu_limit ?? dbCpu * 2,
    db_memory_mb: dbMemory,
    db_memory_limit_mb: input.db_memory_limit_mb ?? dbMemory * 2,
    db_storage_gi: input.db_storage_gi ?? 10,
    db_max_connections: input.db_max_connections ?? 100,
    labels: input.labels ?? {},
    annotations: input.annotations ?? {},
    service_account_name: input.service_account_name ?? null,
    image_pull_secrets: input.image_pull_secrets ?? [],
    volumes: input.volumes ?? [],
    volume_mounts: input.volume_mounts ?? [],
    init_containers: input.init_containers ?? [],
    sidecars: input.sidecars ?? [],
  };
}

/** Fields that may not exceed another: every minimum its maximum, every request its limit. */
export const RESOURCE_SPEC_BOUNDS: ReadonlyArray<readonly [low: keyof ResourceSpec, high: keyof ResourceSpec]> = [
  ['min_scale', 'max_scale'],
  ['queue_min_scale', 'queue_max_scale'],
  ['cpu', 'cpu_limit'],
  ['memory_mb', 'memory_limit_mb'],
  ['queue_cpu', 'queue_cpu_limit'],
  ['queue_memory_mb', 'queue_memory_limit_mb'],
  ['orchestrator_cpu', 'orchestrator_cpu_limit'],
  ['orchestrator_memory_mb', 'orchestrator_memory_limit_mb'],
  ['db_cpu', 'db_cpu_limit'],
  ['db_memory_mb', 'db_memory_limit_mb'],
];

/** Request ≤ limit and min ≤ max, after defaults: a `value_error` naming the lower field of each pair out of order. */
export function resourceSpecProblems(spec: ResourceSpec): InputProblem[] {
  return RESOURCE_SPEC_BOUNDS.filter(([low, high]) => (spec[low] as number) > (spec[high] as number)).map(
    ([low, high]) => resourceSpecProblem([low], 'value_error', `Value error, ${low} must not exceed ${high}`),
  );
}

/**
 * The operator's ceilings on what a resource_spec may ask for (docs/operations.md, Sandbox):
 * every container's memory and CPU (requests and limits alike), the database's disk and
 * connections. Processes and the build's disk have no resource_spec field: the operator sets
 * them outright (SLIPWAY_SANDBOX_PIDS_MAX, SLIPWAY_BUILD_PIDS_MAX, SLIPWAY_BUILD_DISK_MB).
 */
export interface ResourceCeilings {
  memoryMb: number;
  cpu: number;
  diskGi: number;
  dbConnections: number;
}

/** The variable that sets each ceiling, named in a refusal. */
export const CEILING_VARIABLES: Readonly<Record<keyof ResourceCeilings, string>> = {
  memoryMb: 'SLIPWAY_MAX_MEMORY_MB',
  cpu: 'SLIPWAY_MAX_CPU',
  diskGi: 'SLIPWAY_MAX_DISK_GI',
  dbConnections: 'SLIPWAY_MAX_DB_CONNECTIONS',
};

const CEILING_FIELDS: Readonly<Record<keyof ResourceCeilings, ReadonlyArray<keyof ResourceSpec>>> = {
  memoryMb: [
    'memory_mb',
    'memory_limit_mb',
    'queue_memory_mb',
    'queue_memory_limit_mb',
    'orchestrator_memory_mb',
    'orchestrator_memory_limit_mb',
    'redis_memory_mb',
    'db_memory_mb',
    'db_memory_limit_mb',
  ],
  cpu: [
    'cpu',
    'cpu_limit',
    'queue_cpu',
    'queue_cpu_limit',
    'orchestrator_cpu',
    'orchestrator_cpu_limit',
    'db_cpu',
    'db_cpu_limit',
  ],
  diskGi: ['db_storage_gi'],
  dbConnections: ['db_max_connections'],
};

/**
 * `spec` (resolved from `input`) within the ceilings: a value the caller left out is lowered to
 * its ceiling (a limit defaulted to twice its request, the fixed database sizes), so a small
 * ceiling never refuses what nobody asked for; a value the caller gave above its ceiling is a
 * `less_than_equal` problem naming the ceiling.
 */
export function capResourceSpec(
  input: ResourceSpecInput,
  spec: ResourceSpec,
  ceilings: ResourceCeilings,
): { spec: ResourceSpec; problems: InputProblem[] } {
  const capped: Record<string, unknown> = { ...spec };
  const problems: InputProblem[] = [];
  for (const [name, fields] of Object.entries(CEILING_FIELDS) as Array<
    [keyof ResourceCeilings, Array<keyof ResourceSpec>]
  >) {
    const ceiling = ceilings[name];
    for (const field of fields) {
      const value = spec[field] as number;
      if (value <= ceiling) continue;
      if (input[field] == null) capped[field] = ceiling;
      else
        problems.push(
          resourceSpecProblem(
            [field],
            'less_than_equal',
            `Input should be less than or equal to ${ceiling} (the server's ceiling ${CEILING_VARIABLES[name]}; ${field} is ${value})`,
          ),
        );
    }
  }
  return { spec: capped as unknown as ResourceSpec, problems };
}

/** The spec a create or PATCH asks for: every default filled in, within the operator's ceilings. */
export function resolveResourceSpecWithin(
  input: ResourceSpecInput,
  type: DeploymentType | null,
  ceilings: ResourceCeilings,
): ResourceSpec {
  return capResourceSpec(input, resolveResourceSpec(input, type), ceilings).spec;
}

/**
 * What is wrong with a resource_spec of a create or PATCH: values above a ceiling, then requests above limits and
 * minimums above maximums.
 */
export function resourceSpecInputProblems(
  input: ResourceSpecInput,
  type: DeploymentType | null,
  ceilings: ResourceCeilings,
): InputProblem[] {
  const { spec, problems } = capResourceSpec(input, resolveResourceSpec(input, type), ceilings);
  return [...problems, ...resourceSpecProblems(spec)];
}
