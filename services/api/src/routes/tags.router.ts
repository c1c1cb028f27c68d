import { created, defineRoute, noContent, ok, workspaceOf, type RouteSpec } from '../http/route.js';
import { envelope, type PaginationQuery } from '../schemas/common.schema.js';
import { deploymentParams } from '../schemas/deployment.schema.js';
import {
  createTagKeyBody,
  createTagValueBody,
  deploymentTagList,
  listTagsQuery,
  patchTagKeyBody,
  putDeploymentTagsBody,
  tagKeyList,
  tagKeyParams,
  tagKeyResponse,
  tagValueList,
  tagValueParams,
  tagValueResponse,
  type CreateTagKeyBody,
  type CreateTagValueBody,
  type PatchTagKeyBody,
  type PutDeploymentTagsBody,
} from '../schemas/tag.schema.js';
import type { TagService } from '../services/tag.service.js';

type KeyParams = { tag_key_id: string };
type ValueParams = { tag_key_id: string; tag_value_id: string };
type DeploymentParams = { deployment_id: string };

const tag = 'Tags';
const keyNotFound = { description: 'Tag key not found in this workspace' };

/** Tag keys and values of the workspace, and the values a deployment carries. */
export function tagRoutes(tags: TagService): RouteSpec[] {
  return [
    defineRoute<{}, {}, CreateTagKeyBody>({
      method: 'post',
      path: '/v2/tags/keys',
      operationId: 'createTagKey',
      summary: 'Create a tag key',
      tag,
      auth: 'workspace',
      request: { body: createTagKeyBody },
      responses: {
        201: { description: 'Created', schema: tagKeyResponse },
        409: { description: 'The workspace already has this key' },
      },
      handler: async (ctx) => created(await tags.createKey(workspaceOf(ctx), ctx.body)),
    }),
    defineRoute<{}, PaginationQuery>({
      method: 'get',
      path: '/v2/tags/keys',
      operationId: 'listTagKeys',
      summary: 'List tag keys, by key',
      tag,
      auth: 'workspace',
      request: { query: listTagsQuery },
      responses: { 200: { description: 'A page of tag keys', schema: tagKeyList } },
      handler: async (ctx) => ok(envelope(await tags.listKeys(workspaceOf(ctx), ctx.query), ctx.query)),
    }),
    defineRoute<KeyParams>({
      method: 'get',
      path: '/v2/tags/keys/:tag_key_id',
      operationId: 'getTagKey',
      summary: 'Get a tag key',
      tag,
      auth: 'workspace',
      request: { params: tagKeyParams },
      responses: { 200: { description: 'The tag key', schema: tagKeyResponse }, 404: keyNotFound },
      handler: async (ctx) => ok(await tags.getKey(workspaceOf(ctx), ctx.params.tag_key_id)),
    }),
    defineRoute<KeyParams, {}, PatchTagKeyBody>({
      method: 'patch',
      path: '/v2/tags/keys/:tag_key_id',
      operationId: 'updateTagKey',
      summary: 'Rename a tag key or change its description',
      tag,
      auth: 'workspace',
      request: { params: tagKeyParams, body: patchTagKeyBody },
      responses: {
        200: { description: 'The updated tag key', schema: tagKeyResponse },
        404: keyNotFound,
        409: { description: 'The workspace already has the new key' },
      },
      handler: async (ctx) => ok(await tags.patchKey(workspaceOf(ctx), ctx.params.tag_key_id, ctx.body)),
    }),
    defineRoute<KeyParams>({
      method: 'delete',
      path: '/v2/tags/keys/:tag_key_id',
      operationId: 'deleteTagKey',
      summary: 'Delete a tag key with its values; deployments stop carrying them',
      tag,
      auth: 'workspace',
      request: { params: tagKeyParams },
      responses: { 204: { description: 'Deleted' }, 404: keyNotFound },
      handler: async (ctx) => {
        await tags.deleteKey(workspaceOf(ctx), ctx.params.tag_key_id);
        return noContent();
      },
    }),
    defineRoute<KeyParams, {}, CreateTagValueBody>({
      method: 'post',
      path: '/v2/tags/keys/:tag_key_id/values',
      operationId: 'createTagValue',
      summary: 'Add a value to a tag key',
      tag,
      auth: 'workspace',
      request: { params: tagKeyParams, body: createTagValueBody },
      responses: {
        201: { description: 'Created', schema: tagValueResponse },
        404: keyNotFound,
        409: { description: 'The key already has this value' },
      },
      handler: async (ctx) => created(await tags.createValue(workspaceOf(ctx), ctx.params.tag_key_id, ctx.body)),
    }),
    defineRoute<KeyParams, PaginationQuery>({
      method: 'get',
      path: '/v2/tags/keys/:tag_key_id/values',
      operationId: 'listTagValues',
      summary: 'List the values of a tag key, by value',
      tag,
      auth: 'workspace',
      request: { params: tagKeyParams, query: listTagsQuery },
      responses: { 200: { description: 'A page of tag values', schema: tagValueList }, 404: keyNotFound },
      handler: async (ctx) =>
        ok(envelope(await tags.listValues(workspaceOf(ctx), ctx.params.tag_key_id, ctx.query), ctx.query)),
    }),
    defineRoute<ValueParams>({
      method: 'delete',
      path: '/v2/tags/keys/:tag_key_id/values/:tag_value_id',
      operationId: 'deleteTagValue',
      summary: 'Delete a tag value; deployments stop carrying it',
      tag,
      auth: 'workspace',
      request: { params: tagValueParams },
      responses: {
        204: { description: 'Deleted' },
        404: { description: 'Tag key or value not found in this workspace' },
      },
      handler: async (ctx) => {
        await tags.deleteValue(workspaceOf(ctx), ctx.params.tag_key_id, ctx.params.tag_value_id);
        return noContent();
      },
    }),
    defineRoute<DeploymentParams, PaginationQuery>({
      method: 'get',
      path: '/v2/deployments/:deployment_id/tags',
      operationId: 'listDeploymentTags',
      summary: "A deployment's tag values with their keys, by key",
      tag,
      auth: 'workspace',
      request: { params: deploymentParams, query: listTagsQuery },
      responses: {
        200: { description: 'A page of the tags the deployment carries', schema: deploymentTagList },
        404: { description: 'Deployment not found in this workspace' },
      },
      handler: async (ctx) =>
        ok(envelope(await tags.deploymentTags(workspaceOf(ctx), ctx.params.deployment_id, ctx.query), ctx.query)),
    }),
    defineRoute<DeploymentParams, {}, PutDeploymentTagsBody>({
      method: 'put',
      path: '/v2/deployments/:deployment_id/tags',
      operationId: 'replaceDeploymentTags',
      summary: "Replace a deployment's tag values (at most one per key)",
      tag,
      auth: 'workspace',
      request: { params: deploymentParams, body: putDeploymentTagsBody },
      responses: {
        200: { description: 'All the tags the deployment now carries', schema: deploymentTagList },
        400: { description: 'Two values of the same key' },
        404: { description: 'Deployment or tag value not found in this workspace' },
      },
      handler: async (ctx) => {
        const all = await tags.replaceDeploymentTags(
          workspaceOf(ctx),
          ctx.params.deployment_id,
          ctx.body.tag_value_ids,
        );
        return ok(envelope(all, { offset: 0, limit: all.length }));
      },
    }),
  ];
}
