import Joi from 'joi';
import { timestamp, uuid } from './common.schema.js';

export const apiKeyParams = Joi.object({ api_key_id: uuid().required() });

export const createApiKeyBody = Joi.object({
  description: Joi.string().max(500).allow('').default(''),
  scope: Joi.string().valid('workspace', 'organization').default('workspace'),
  role: Joi.string().valid('admin', 'member').default('member'),
  listener_id: uuid().description("Makes this a listener agent's key, usable only for that listener's agent endpoints"),
})
  .required()
  .id('CreateApiKey');

export const apiKeyResponse = Joi.object({
  id: uuid().required(),
  prefix: Joi.string().required().description('First characters of the key, to tell keys apart'),
  description: Joi.string().allow('').required(),
  scope: Joi.string().valid('workspace', 'organization').required(),
  role: Joi.string().valid('admin', 'member').required(),
  organization_id: uuid().required(),
  tenant_id: uuid().allow(null).required(),
  listener_id: uuid().allow(null).required(),
  created_at: timestamp().required(),
  last_used_at: timestamp().allow(null).required(),
}).id('ApiKey');

export const createdApiKeyResponse = apiKeyResponse
  .keys({ key: Joi.string().required().description('The key itself: shown only in this response') })
  .id('CreatedApiKey');

export const apiKeyList = Joi.array().items(apiKeyResponse).id('ApiKeyList');

export interface CreateApiKeyBody {
  description: string;
  scope: 'workspace' | 'organization';
  role: 'admin' | 'member';
  listener_id?: string;
}
