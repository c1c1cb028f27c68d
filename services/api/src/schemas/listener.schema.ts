import Joi from 'joi';
import { DNS1123_LABEL, DNS1123_LABEL_MAX } from '@slipway/domain';
import { RELAXABLE_VOLUME_TYPES, type PodPolicy } from '@slipway/runtime';
import { paginationQuery, listEnvelope, timestamp, uuid } from './common.schema.js';

export const COMPUTE_TYPES = ['k8s'] as const;
export type ComputeType = (typeof COMPUTE_TYPES)[number];

const namespace = Joi.string()
  .max(DNS1123_LABEL_MAX)
  .pattern(DNS1123_LABEL)
  .description('A Kubernetes namespace (DNS-1123 label)');

/** What a workspace admin may relax for the deployments of one listener (docs/operations.md, Kubernetes pod policy). */
export const podPolicy = Joi.object({
  volume_types: Joi.array()
    .items(Joi.string().valid(...RELAXABLE_VOLUME_TYPES))
    .unique()
    .description("Volume sources allowed beyond emptyDir and the deployment's own Secret/ConfigMap"),
  namespace_config_refs: Joi.boolean().description(
    'Volumes, envFrom and valueFrom may name any Secret or ConfigMap of the namespace',
  ),
  service_account: Joi.boolean().description(
    "resource_spec.service_account_name is used (token mounted) instead of the deployment's own tokenless one",
  ),
  ingress_annotations: Joi.boolean().description('resource_spec.annotations also go on the Ingress'),
})
  .allow(null)
  .id('PodPolicy')
  .description(
    "Relaxations of the Kubernetes pod policy for this listener's deployments; null or absent: none. " +
      'Never beyond Pod Security Standards restricted',
  );

export const computeConfig = Joi.object({
  k8s_namespaces: Joi.array()
    .items(namespace)
    .unique()
    .max(1000)
    .allow(null)
    .description('Namespaces the listener may deploy into; null: any'),
  pod_policy: podPolicy,
})
  .id('ComputeConfig')
  .description('Fields specific to `compute_type`; all nullable');

const computeType = Joi.string()
  .valid(...COMPUTE_TYPES)
  .description('Compute type of the listener');
const computeId = Joi.string()
  .min(1)
  .max(253)
  .description('ID of the compute infrastructure (for k8s, e.g. the cluster name)');
const version = Joi.string().max(200).allow(null).description('Version of the listener');

export const listenerParams = Joi.object({ listener_id: uuid().required() });

export const createListenerBody = Joi.object({
  compute_type: computeType.required(),
  compute_id: computeId.required(),
  compute_config: computeConfig.required(),
  version,
})
  .required()
  .id('CreateListener');

export const putListenerBody = createListenerBody.id('PutListener');

export const patchListenerBody = Joi.object({
  compute_type: computeType,
  compute_id: computeId,
  compute_config: computeConfig,
  version,
})
  .required()
  .id('PatchListener');

export const listListenersQuery = Joi.object(paginationQuery);

export const listenerResponse = Joi.object({
  id: uuid().required(),
  tenant_id: uuid().required(),
  compute_type: Joi.string().required(),
  compute_id: Joi.string().required(),
  compute_config: computeConfig.required(),
  version: Joi.string().allow(null).required(),
  last_seen_at: timestamp().allow(null).required().description('Last time the listener agent called in'),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
}).id('Listener');

export const listenerList = listEnvelope(listenerResponse, 'ListenerList');

export interface ComputeConfigBody {
  k8s_namespaces?: string[] | null;
  pod_policy?: PodPolicy | null;
}

export interface CreateListenerBody {
  compute_type: ComputeType;
  compute_id: string;
  compute_config: ComputeConfigBody;
  version?: string | null;
}

export type PatchListenerBody = Partial<CreateListenerBody>;
