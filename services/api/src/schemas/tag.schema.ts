import Joi from 'joi';
import { listEnvelope, paginationQuery, timestamp, uuid } from './common.schema.js';

/** Tag keys: letters, digits and `_ . : -`, so they read well in filters and labels. */
export const TAG_KEY_PATTERN = /^[A-Za-z0-9_.:-]+$/;

const tagKey = Joi.string().min(1).max(100).pattern(TAG_KEY_PATTERN).description('Unique in the workspace');
const description = Joi.string().allow('').max(1000);
const tagValue = Joi.string().min(1).max(255).description('Unique within its key');

export const tagKeyParams = Joi.object({ tag_key_id: uuid().required() });
export const tagValueParams = Joi.object({ tag_key_id: uuid().required(), tag_value_id: uuid().required() });

export const createTagKeyBody = Joi.object({
  key: tagKey.required(),
  description: description.default(''),
})
  .required()
  .id('CreateTagKey');

export const patchTagKeyBody = Joi.object({
  key: tagKey,
  description,
})
  .required()
  .id('PatchTagKey');

export const createTagValueBody = Joi.object({ value: tagValue.required() }).required().id('CreateTagValue');

/** At most one value per key is checked in the service, where the keys are known. */
export const putDeploymentTagsBody = Joi.object({
  tag_value_ids: Joi.array()
    .items(uuid())
    .unique()
    .max(100)
    .required()
    .description('The complete new set; [] removes all'),
})
  .required()
  .id('PutDeploymentTags');

export const listTagsQuery = Joi.object(paginationQuery);

export const tagKeyResponse = Joi.object({
  id: uuid().required(),
  tenant_id: uuid().required(),
  key: Joi.string().required(),
  description: Joi.string().allow('').required(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
}).id('TagKey');

export const tagValueResponse = Joi.object({
  id: uuid().required(),
  tag_key_id: uuid().required(),
  value: Joi.string().required(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
}).id('TagValue');

export const deploymentTagResponse = Joi.object({
  tag_key_id: uuid().required(),
  key: Joi.string().required(),
  tag_value_id: uuid().required(),
  value: Joi.string().required(),
}).id('DeploymentTag');

export const tagKeyList = listEnvelope(tagKeyResponse, 'TagKeyList');
export const tagValueList = listEnvelope(tagValueResponse, 'TagValueList');
export const deploymentTagList = listEnvelope(deploymentTagResponse, 'DeploymentTagList');

export interface CreateTagKeyBody {
  key: string;
  description: string;
}

export interface PatchTagKeyBody {
  key?: string;
  description?: string;
}

export interface CreateTagValueBody {
  value: string;
}

export interface PutDeploymentTagsBody {
  tag_value_ids: string[];
}
