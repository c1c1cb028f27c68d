import Joi from 'joi';
import { uuid } from './common.schema.js';

export const previewParams = Joi.object({
  deployment_id: uuid().required(),
  number: Joi.number().integer().min(1).max(1_000_000_000).required(),
});

export const openPreviewBody = Joi.object({
  ref: Joi.string().max(255).required().description("The branch (or tag) to build: the pull request's head"),
  number: Joi.number()
    .integer()
    .min(1)
    .max(1_000_000_000)
    .description('The pull request number; the next free number when left out'),
  head_sha: Joi.string()
    .pattern(/^[0-9a-f]{7,64}$/)
    .allow(null)
    .description('Recorded in the preview object'),
  url: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .max(2048)
    .allow(null)
    .description("The pull request's page, recorded in the preview object"),
})
  .required()
  .id('OpenPreview');

export type OpenPreviewBody = { ref: string; number?: number; head_sha?: string | null; url?: string | null };

export const approvePreviewBody = Joi.object({
  head_sha: Joi.string()
    .pattern(/^[0-9a-f]{40}([0-9a-f]{24})?$/)
    .message('head_sha must be a full commit id (40 or 64 hexadecimal characters)')
    .description(
      'Approve only this head commit (the one you reviewed): when another head waits (the fork pushed since), ' +
        'nothing builds and the answer is 404',
    ),
})
  .default({})
  .id('ApprovePreview');

export type ApprovePreviewBody = { head_sha?: string };

export const previewRequest = Joi.object({
  number: Joi.number().integer().required(),
  head_ref: Joi.string().required(),
  head_sha: Joi.string().required().description('The head commit an approve builds'),
  url: Joi.string().allow(null).required(),
  repository: Joi.string().allow(null).required(),
  fork_repository: Joi.string().allow(null).required().description('The fork the pull request comes from'),
  received_at: Joi.string().isoDate().required(),
}).id('PreviewRequest');

export const previewRequestList = Joi.object({
  resources: Joi.array().items(previewRequest).required(),
}).id('PreviewRequestList');
