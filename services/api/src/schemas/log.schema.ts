import Joi from 'joi';
import { timestamp, uuid } from './common.schema.js';

export const LOG_TYPES = ['build', 'deploy'] as const;
export type LogTypeInput = (typeof LOG_TYPES)[number];
export const LOG_PAGE_MAX = 1000;

/** A log cursor: the id of the last line already seen (a bigint, so at most 18 digits here). */
export const logCursor = Joi.string().pattern(/^[0-9]{1,18}$/);

const paging = {
  limit: Joi.number().integer().min(1).max(LOG_PAGE_MAX).default(50).description('Lines per page'),
  order: Joi.string()
    .valid('asc', 'desc')
    .default('asc')
    .description('asc: oldest first; desc: newest first (by timestamp, then id)'),
};

/** The filters of every log endpoint (docs/api.md, Logs); null is "not given" (the CLIs send nulls). */
const filters = {
  level: Joi.string()
    .max(32)
    .allow(null, '')
    .description('Only lines of this level (case-insensitive: info, warn, error)'),
  query: Joi.string()
    .max(1000)
    .allow(null, '')
    .description('Only lines whose message contains this text (case-insensitive)'),
  start_time: Joi.date().iso().allow(null, '').description('Only lines at or after this time (inclusive)'),
  end_time: Joi.date().iso().allow(null, '').description('Only lines before this time (exclusive)'),
  instance: Joi.number()
    .integer()
    .min(0)
    .max(999)
    .allow(null)
    .description('Only deploy-log lines printed by the instance of this index'),
};

export const logsQuery = Joi.object({
  type: Joi.string()
    .valid(...LOG_TYPES)
    .default('build'),
  ...paging,
  ...filters,
  offset: logCursor
    .allow('')
    .description('The `next_offset` (or any line id) of the previous page: continue strictly after that line'),
  follow: Joi.boolean()
    .default(false)
    .description(
      'Server-Sent Events: every matching line, then new ones as they are stored, ' +
        'until the build ends or (deploy logs) the revision stops running: ' +
        'the active revision is followed until the client leaves; `Last-Event-ID` resumes',
    ),
});

export const followHeaders = Joi.object({
  'last-event-id': logCursor.description('The id of the last event received: resume after it'),
});

/**
 * The body the published CLIs send (`{limit, order, offset, level, query, start_time,
 * end_time}`); all optional. `offset` may come as a number too.
 */
export const logsBody = Joi.object({
  ...paging,
  ...filters,
  offset: Joi.alternatives()
    .try(logCursor, Joi.number().integer().min(0).max(Number.MAX_SAFE_INTEGER))
    .allow(null, '')
    .description('The `next_offset` of the previous page'),
})
  .default()
  .id('LogsQuery');

export const workspaceLogsQuery = Joi.object({
  type: Joi.string()
    .valid(...LOG_TYPES)
    .description('build or deploy; both when absent'),
  deployment_id: uuid(),
  revision_id: uuid(),
  ...paging,
  ...filters,
  offset: logCursor.allow('').description('The `next_offset` of the previous page'),
  follow: Joi.boolean()
    .default(false)
    .description(
      'Server-Sent Events: every matching line, then new ones as they are stored, until the client leaves; `Last-Event-ID` resumes',
    ),
});

const entryFields = {
  id: Joi.string().required(),
  timestamp: timestamp().required(),
  level: Joi.string().required(),
  message: Joi.string().allow('').required(),
  instance: Joi.number()
    .integer()
    .description(
      "Index of the instance that printed the line (deploy logs); absent on build lines and the rollout's own lines",
    ),
};

const nextOffset = Joi.string()
  .allow(null)
  .required()
  .description(
    'Cursor to continue after the last line returned (also to follow a growing log); null when this page is empty',
  );

export const logPageResponse = Joi.object({
  logs: Joi.array().items(Joi.object(entryFields).id('LogEntry')).required(),
  next_offset: nextOffset,
}).id('LogPage');

export const workspaceLogPageResponse = Joi.object({
  logs: Joi.array()
    .items(
      Joi.object({
        ...entryFields,
        deployment_id: uuid().required(),
        revision_id: uuid().required(),
        type: Joi.string()
          .valid(...LOG_TYPES)
          .required(),
      }).id('WorkspaceLogEntry'),
    )
    .required(),
  next_offset: nextOffset,
}).id('WorkspaceLogPage');

export interface LogFilters {
  level?: string | null;
  query?: string | null;
  start_time?: Date | null | '';
  end_time?: Date | null | '';
  instance?: number | null;
}

export interface LogsBody extends LogFilters {
  limit: number;
  order: 'asc' | 'desc';
  offset?: string | number | null;
}

export interface LogsQuery extends LogsBody {
  type: LogTypeInput;
  follow: boolean;
}

export interface WorkspaceLogsQuery extends LogsBody {
  type?: LogTypeInput;
  follow?: boolean;
  deployment_id?: string;
  revision_id?: string;
}
