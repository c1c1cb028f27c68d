// The cron routes of the LangGraph Server API, served by the host in front of the published
// server's (which answer 500 "Not implemented"). Bodies are checked as the server checks its own
// (zod; a bad body answers 400 naming the field), schedules and timezones by parsing them.
import { zValidator } from '@hono/zod-validator';
import type { Hono } from 'hono';
import { z } from 'zod/v3';
import { nextRunDate, type PgCrons } from './crons.js';
import { getAssistantId } from './upstream.js';

const validSchedule = (s: string) => {
  try {
    nextRunDate(s, 'UTC', new Date());
    return true;
  } catch {
    return false;
  }
};
const validTimezone = (tz: string) => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
};
const dateTime = z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'must be an ISO 8601 date-time');
const object = z.object({}).catchall(z.any());

const RunFields = {
  input: z.union([z.array(object), object]).nullish(),
  config: object.optional(),
  context: z.unknown().optional(),
  metadata: object.optional(),
  webhook: z.string().url().optional(),
  interrupt_before: z.union([z.enum(['*']), z.array(z.string())]).optional(),
  interrupt_after: z.union([z.enum(['*']), z.array(z.string())]).optional(),
  stream_mode: z.union([z.string(), z.array(z.string())]).optional(),
  stream_subgraphs: z.boolean().optional(),
  stream_resumable: z.boolean().optional(),
  durability: z.enum(['sync', 'async', 'exit']).optional(),
  checkpoint_during: z.boolean().optional(),
};

const ScheduleFields = {
  schedule: z.string().refine(validSchedule, 'is not a cron schedule (five or six fields, e.g. "*/5 * * * *")'),
  timezone: z.string().refine(validTimezone, 'is not an IANA timezone').nullish(),
  enabled: z.boolean().optional(),
  on_run_completed: z.enum(['delete', 'keep']).optional(),
};

const CronCreate = z.object({
  assistant_id: z.string().min(1),
  ...ScheduleFields,
  end_time: dateTime.optional(),
  multitask_strategy: z.enum(['reject', 'rollback', 'interrupt', 'enqueue']).optional(),
  ...RunFields,
});

const CronPatch = z.object({
  ...ScheduleFields,
  schedule: ScheduleFields.schedule.optional(),
  end_time: dateTime.nullish(),
  ...RunFields,
});

const filters = {
  assistant_id: z.string().optional(),
  thread_id: z.string().optional(),
  metadata: object.optional(),
};

const CronSearch = z.object({
  ...filters,
  enabled: z.boolean().optional(),
  limit: z.number().int().gte(1).lte(1000).optional(),
  offset: z.number().int().gte(0).optional(),
  sort_by: z.enum(['cron_id', 'assistant_id', 'thread_id', 'created_at', 'updated_at', 'next_run_date']).optional(),
  sort_order: z.enum(['asc', 'desc']).optional(),
  select: z.array(z.string()).optional(),
});

const CronCount = z.object(filters);

const cronId = zValidator('param', z.object({ cron_id: z.string().uuid() }));

/** Mounts the cron routes on `app` (the host's app, in front of the published server's routes). */
export function mountCronRoutes(app: Hono, crons: PgCrons): void {
  const auth = (c: { var: unknown }) => (c.var as { auth?: unknown }).auth;
  app.post('/runs/crons', zValidator('json', CronCreate), async (c) => {
    const body = c.req.valid('json');
    return c.json(await crons.create(undefined, getAssistantId(body.assistant_id), body, auth(c)));
  });
  app.post('/threads/:thread_id/runs/crons', zValidator('json', CronCreate), async (c) => {
    const body = c.req.valid('json');
    return c.json(await crons.create(c.req.param('thread_id'), getAssistantId(body.assistant_id), body, auth(c)));
  });
  app.post('/runs/crons/search', zValidator('json', CronSearch), async (c) => {
    const query = c.req.valid('json');
    if (query.assistant_id != null) query.assistant_id = getAssistantId(query.assistant_id);
    return c.json(await crons.search(query, auth(c)));
  });
  app.post('/runs/crons/count', zValidator('json', CronCount), async (c) => {
    const query = c.req.valid('json');
    if (query.assistant_id != null) query.assistant_id = getAssistantId(query.assistant_id);
    return c.json(await crons.count(query, auth(c)));
  });
  app.patch('/runs/crons/:cron_id', cronId, zValidator('json', CronPatch), async (c) => {
    return c.json(await crons.update(c.req.valid('param').cron_id, c.req.valid('json'), auth(c)));
  });
  app.delete('/runs/crons/:cron_id', cronId, async (c) => {
    await crons.delete(c.req.valid('param').cron_id, auth(c));
    return c.body(null, 204);
  });
}
