import Joi from 'joi';
import { timestamp } from './common.schema.js';

export const LOG_TYPES = ['build', 'deploy'] as const;
export type LogTypeInput = (typeof LOG_TYPES)[number];
export const LOG_PAGE_MAX = 1000;

/** A log cursor: the id of the last line already seen (a bigint, so at most 18 digits here). */
const cursor = Joi.string().pattern(/^[0-9]{1,18}$/);

const paging = {
  limit: Joi.number().integer().min(1).max(LOG_PAGE_MAX).default(100).description('Lines per page'),
  order: Joi.string().valid('asc', 'desc').default('asc').description('asc: oldest first; desc: newest first'),
};

export const logsQuery = Joi.object({
  type: Joi.string().valid(...LOG_TYPES).default('build'),
  ...paging,
  offset: cursor.allow('').description('The `next_offset` of the previous page'),
});

/**
 * The body the published CLIs send (`{limit, order, offset}`); all optional, and other fields
 * they send (`level`, `query`, `start_time`) are ignored. `offset` may come as a number too.
 */
export const logsBody = Joi.object({
  ...paging,
  offset: Joi.alternatives()
    .try(cursor, Joi.number().integer().min(0).max(Number.MAX_SAFE_INTEGER))
    .allow(null, '')
    .description('The `next_offset` of the previous page'),
})
  .default()
  .id('LogsQuery');

export const logPageResponse = Joi.object({
  logs: Joi.array()
    .items(
      Joi.object({
        id: Joi.string().required(),
        timestamp: timestamp().required(),
        level: Joi.string().required(),
        message: Joi.string().allow('').required(),
      }).id('LogEntry'),
    )
    .required(),
  next_offset: Joi.string()
    .allow(null)
    .required()
    .description('Cursor to continue after the last line returned (also to follow a growing log); null when this page is empty'),
}).id('LogPage');

export interface LogsQuery {
  type: LogTypeInput;
  limit: number;
  order: 'asc' | 'desc';
  offset?: string | number | null;
}

export type LogsBody = Omit<LogsQuery, 'type'>;
