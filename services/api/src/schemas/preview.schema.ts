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
