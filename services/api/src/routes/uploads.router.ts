import { defineRoute, ok, workspaceOf, type RouteSpec } from '../http/route.js';
import { deploymentParams } from '../schemas/deployment.schema.js';
import { uploadCompleteResponse, uploadParams, uploadUrlResponse } from '../schemas/upload.schema.js';
import type { UploadService } from '../services/upload.service.js';

const tag = 'Uploads';

/** Source tarball uploads for `upload` deployments, as the published deploy CLIs do them (docs/api.md, Uploads and the deploy CLIs). */
export function uploadRoutes(uploads: UploadService): RouteSpec[] {
  return [
    defineRoute<{ deployment_id: string }>({
      method: 'post',
      path: '/v2/deployments/:deployment_id/upload-url',
      operationId: 'createUploadUrl',
      summary: 'Get a signed URL (valid 1 h by default) to PUT a source tarball to',
      tag,
      auth: 'workspace',
      request: { params: deploymentParams },
      responses: {
        200: {
          description: 'Where to PUT the tarball, and the object_path to PATCH the deployment with',
          schema: uploadUrlResponse,
        },
        400: { description: 'Not an upload deployment, or it is being deleted' },
        404: { description: 'Deployment not found in this workspace' },
      },
      handler: async (ctx) => ok(await uploads.createUploadUrl(workspaceOf(ctx), ctx.params.deployment_id)),
    }),
    defineRoute<{ token: string }>({
      method: 'put',
      path: '/v2/uploads/:token',
      operationId: 'putUpload',
      summary: 'Upload a gzip source tarball to a signed upload URL (the URL is the credential; no API key)',
      tag,
      auth: 'none',
      streamBody: true,
      request: { params: uploadParams },
      responses: {
        200: { description: 'Stored', schema: uploadCompleteResponse },
        400: { description: 'Not gzip data, or the body was cut short' },
        401: { description: 'Invalid or expired upload URL' },
        409: { description: 'This URL was already used, or an upload to it is in progress' },
        413: { description: 'Larger than the upload limit (200 MB by default)' },
      },
      handler: async (ctx) => {
        await uploads.receive(ctx.params.token, ctx.headers['content-length'], ctx.bodyStream!);
        return ok({});
      },
    }),
  ];
}
