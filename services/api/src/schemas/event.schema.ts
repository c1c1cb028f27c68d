import Joi from 'joi';
import { timestamp, uuid } from './common.schema.js';

export const EVENT_TYPES = [
  'deployment.created',
  'deployment.status_changed',
  'deployment.deleted',
  'revision.created',
  'revision.status_changed',
  'domain.state_changed',
  'preview.created',
  'preview.deleted',
  'preview.feedback_failed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** An event id (a bigint, so at most 18 digits here). */
export const eventCursor = Joi.string().pattern(/^[0-9]{1,18}$/);

const filters = {
  deployment_id: uuid().description("Only this deployment's events"),
  types: Joi.array()
    .items(Joi.string().valid(...EVENT_TYPES))
    .single()
    .description('Only these event types (repeat the parameter)'),
};

export const listEventsQuery = Joi.object({
  after: eventCursor.allow('').description('The id of the last event already seen (the `offset` of the previous page)'),
  limit: Joi.number().integer().min(1).max(100).default(20),
  ...filters,
});

export const streamEventsQuery = Joi.object({
  after: eventCursor.description(
    'Start after this event id (Last-Event-ID wins); without either, only new events come',
  ),
  ...filters,
});

export const eventStreamHeaders = Joi.object({
  'last-event-id': eventCursor.description('The id of the last event received: resume after it'),
});

export const eventResponse = Joi.object({
  id: Joi.string().required().description('Grows in commit order within the workspace'),
  type: Joi.string()
    .valid(...EVENT_TYPES)
    .required(),
  created_at: timestamp().required(),
  deployment_id: uuid().allow(null).required(),
  revision_id: uuid().allow(null).required(),
  data: Joi.object()
    .unknown(true)
    .required()
    .description('status_changed: from, to (and status_message for revisions)'),
}).id('Event');

export const eventPage = Joi.object({
  resources: Joi.array().items(eventResponse).required(),
  offset: Joi.string()
    .allow(null)
    .required()
    .description('Pass as `after` for the next page: the last id returned, else the `after` given'),
}).id('EventPage');

export interface EventFilters {
  deployment_id?: string;
  types?: EventType[];
}

export interface ListEventsQuery extends EventFilters {
  after?: string;
  limit: number;
}

export interface StreamEventsQuery extends EventFilters {
  after?: string;
}
