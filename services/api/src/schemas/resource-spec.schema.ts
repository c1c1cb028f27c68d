import Joi from 'joi';
import { DNS1123_LABEL } from '@slipway/domain';

const freeObject = () => Joi.object().unknown(true);
const stringMap = () => Joi.object().pattern(Joi.string().max(317), Joi.string().max(4096).allow(''));

/** Seed 2.5: a volume mount. */
export const volumeMount = Joi.object({
  name: Joi.string().max(253).required(),
  mountPath: Joi.string().max(4096).required(),
  subPath: Joi.string().max(4096),
  mountPropagation: Joi.string().valid('None', 'HostToContainer', 'Bidirectional'),
  subPathExpr: Joi.string().max(4096),
  readOnly: Joi.boolean(),
}).id('VolumeMount');

const envVar = Joi.object({
  name: Joi.string().max(253).required(),
  value: Joi.string().allow('').max(65536),
  valueFrom: freeObject(),
});

/** Seed 2.5: a container of `init_containers` / `sidecars`; name and image required (C4). */
export const container = Joi.object({
  name: Joi.string().max(63).pattern(DNS1123_LABEL).required(),
  image: Joi.string().min(1).max(1024).required(),
  imagePullPolicy: Joi.string().valid('Always', 'IfNotPresent', 'Never'),
  workingDir: Joi.string().max(4096),
  restartPolicy: Joi.string().valid('Always'),
  command: Joi.array().items(Joi.string()),
  args: Joi.array().items(Joi.string()),
  env: Joi.array().items(envVar),
  envFrom: Joi.array().items(freeObject()),
  resources: Joi.object({ limits: freeObject(), requests: freeObject() }),
  volumeMounts: Joi.array().items(volumeMount),
  securityContext: freeObject(),
}).id('Container');

/**
 * Volume sources the schema takes. For deployments that render to Kubernetes the pod policy
 * decides which may be used (docs/operations.md, Kubernetes pod policy): `hostPath` and `nfs` are
 * listed only so that a 422 can name them.
 */
const volumeSources = [
  'configMap',
  'secret',
  'emptyDir',
  'persistentVolumeClaim',
  'nfs',
  'projected',
  'downwardAPI',
  'csi',
  'ephemeral',
  'hostPath',
] as const;

export const volume = Joi.object({
  name: Joi.string().max(63).pattern(DNS1123_LABEL).required(),
  ...Object.fromEntries(volumeSources.map((k) => [k, freeObject()])),
}).id('Volume');

const positive = () => Joi.number().positive();
const count = () => Joi.number().integer().min(0).max(1000);

/**
 * Seed 2.4. Every field optional: the deployment type fills the rest (C4). Cross-field rules
 * (min ≤ max, request ≤ limit) are checked after defaults, in the service.
 */
export const resourceSpec = Joi.object({
  min_scale: count(),
  max_scale: Joi.number().integer().min(1).max(1000),
  cpu: positive().description('Cores (fractions allowed)'),
  cpu_limit: positive(),
  memory_mb: positive().integer(),
  memory_limit_mb: positive().integer(),
  queue_enabled: Joi.boolean().description(
    'Separate queue workers run the graphs and API instances only serve (default: whether queue_min_scale is given)',
  ),
  queue_min_scale: count(),
  queue_max_scale: Joi.number().integer().min(1).max(1000),
  queue_cpu: positive(),
  queue_cpu_limit: positive(),
  queue_memory_mb: positive().integer(),
  queue_memory_limit_mb: positive().integer(),
  orchestrator_cpu: positive(),
  orchestrator_cpu_limit: positive(),
  orchestrator_memory_mb: positive().integer(),
  orchestrator_memory_limit_mb: positive().integer(),
  redis_memory_mb: positive().integer(),
  db_cpu: positive(),
  db_cpu_limit: positive(),
  db_memory_mb: positive().integer(),
  db_memory_limit_mb: positive().integer(),
  db_storage_gi: positive().integer(),
  db_max_connections: Joi.number().integer().min(1).max(100_000),
  labels: stringMap(),
  annotations: stringMap(),
  service_account_name: Joi.string().max(253).allow(null),
  image_pull_secrets: Joi.array().items(Joi.object({ name: Joi.string().max(253).required() })),
  volumes: Joi.array().items(volume).unique('name'),
  volume_mounts: Joi.array().items(volumeMount),
  init_containers: Joi.array().items(container).unique('name'),
  sidecars: Joi.array().items(container).unique('name'),
}).id('ResourceSpec');
