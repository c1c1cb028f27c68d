import Joi from 'joi';
import { REVISION_STATUSES } from '@slipway/domain';
import { timestamp, uuid } from './common.schema.js';

export const REVISION_HISTORY_MAX = 100;

export const revisionHistoryQuery = Joi.object({
  limit: Joi.number()
    .integer()
    .min(1)
    .max(REVISION_HISTORY_MAX)
    .default(50)
    .description('How many of the newest revisions'),
});

export interface RevisionHistoryQuery {
  limit: number;
}

const status = () => Joi.string().valid(...REVISION_STATUSES);

export const revisionHistoryResponse = Joi.object({
  resources: Joi.array()
    .items(
      Joi.object({
        revision_id: uuid().required(),
        status: status().required(),
        status_message: Joi.string().allow(null).required(),
        created_at: timestamp().required(),
        changes: Joi.array()
          .items(
            Joi.object({
              from: status().allow(null).required(),
              to: status().required(),
              at: timestamp().required(),
              time_in_status_ms: Joi.number()
                .integer()
                .allow(null)
                .required()
                .description('How long the revision had been in `from`'),
            }).id('RevisionStatusChange'),
          )
          .required()
          .description('Every status change, oldest first'),
      }).id('RevisionHistory'),
    )
    .required()
    .description('Newest revision first'),
}).id('RevisionHistoryList');
