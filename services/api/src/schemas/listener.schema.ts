import Joi from 'joi';
import { DNS1123_LABEL, DNS1123_LABEL_MAX } from '@slipway/domain';
import { paginationQuery, listEnvelope, timestamp, uuid } from './common.schema.js';

export const COMPUTE_TYPES = ['k8s'] as const;
export type ComputeType = (typeof COMPUTE_TYPES)[number];

const namespace = Joi.string()
  .max(DNS1123_LABEL_MAX)
  .pattern(DNS1123_LABEL)
  .description('A Kubernetes namespace (DNS-1123 label)');

export const computeConfig = Joi.object({
  k8s_namespaces: Joi.array().items(namespace).unique().max(1000).allow(null).description('Namespaces the listener may deploy into'),
})
  .id('ComputeConfig')
  .description('Fields specific to `compute_type`; all nullable');

const computeType = Joi.string().valid(...COMPUTE_TYPES).description('Compute type of the listener');
const computeId = Joi.string().min(1).max(253).description('ID of the compute infrastructure (for k8s, e.g. the cluster name)');
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
}

export interface CreateListenerBody {
  compute_type: ComputeType;
  compute_id: string;
  compute_config: ComputeConfigBody;
  version?: string | null;
}

export type PatchListenerBody = Partial<CreateListenerBody>;
