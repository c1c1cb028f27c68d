import type { Request, Response, Router } from 'express';
import type Joi from 'joi';
import type { Logger } from '@slipway/logging';
import { isDatabaseUnavailable } from '@slipway/db';
import { TraceWriters, type TraceWriter } from '../auth/trace-writers.js';
import type { Admission } from './admission.js';
import type { RequestContext, RouteSpec } from './route.js';
import { inputIssues, locWithin } from './input-guard.js';
import { serveEventStream } from './sse.js';
import type { StreamSlots } from './stream-slots.js';
import { actingAs, actorOf } from '../services/request-actor.js';
import { issuesFromJoi, type Source, type ValidationIssue } from '../schemas/validation-error.js';
import { RequestValidationError } from '@slipway/domain';

/**
 * Unknown fields are ignored, never rejected (docs/api.md, Conventions): real clients send extras. They are
 * stripped so handlers only ever see fields we know.
 */
const JOI_OPTIONS: Joi.ValidationOptions = {
  abortEarly: false,
  convert: true,
  allowUnknown: true,
  stripUnknown: { objects: true, arrays: false },
  errors: { wrap: { label: false } },
};

/**
 * One part of a request: first the checks every value gets whatever its schema (characters
 * Postgres cannot store, depth), then the route's schema. A value the first refuses is not
 * reported again by the second.
 */
function validatePart(schema: Joi.Schema | undefined, value: unknown, source: Source, issues: ValidationIssue[]): any {
  const raw = inputIssues(value, source);
  issues.push(...raw);
  if (!schema) return value;
  // Too deep for the guard is too deep for joi's recursion too: do not hand it over.
  if (raw.some((i) => i.type === 'too_deep')) return value;
  const result = schema.validate(value, JOI_OPTIONS);
  if (result.error) {
    issues.push(
      ...issuesFromJoi(result.error, source, schema).filter((i) => !raw.some((r) => locWithin(i.loc, r.loc))),
    );
  }
  return result.value;
}

/** Validates params, query, headers and body together, so a 422 lists every problem at once. */
function validateRequest(
  route: RouteSpec,
  req: Request,
): Pick<RequestContext, 'params' | 'query' | 'body' | 'headers'> {
  const issues: ValidationIssue[] = [];
  const { params, query, body, headers } = route.request ?? {};
  const out = {
    params: validatePart(params, { ...req.params }, 'path', issues),
    query: validatePart(query, { ...(req.query as object) }, 'query', issues),
    headers: { ...req.headers, ...validatePart(headers, { ...req.headers }, 'header', issues) },
    body: validatePart(body, req.body, 'body', issues),
  };
  if (issues.length) throw new RequestValidationError(issues);
  return out;
}

export interface MountDeps {
  admission: Admission;
  /** Aborted at shutdown: ends open event streams. */
  shutdown?: AbortSignal;
  /** The bound on open event streams per caller (absent: unbounded). */
  streams?: StreamSlots;
  /** Trace-ingest credentials, on `traceIngest` routes (absent: refused like any unknown key). */
  traceWriters?: TraceWriters;
}

/**
 * Mounts each route as: admit (authenticate, charge the request budget) → validate → handler →
 * respond. Handlers get typed, converted values and never touch `req`/`res`; errors flow to the
 * one error middleware.
 */
export function mountRoutes(
  router: Router,
  routes: readonly RouteSpec[],
  { admission, shutdown, streams, traceWriters }: MountDeps,
): void {
  for (const route of routes) {
    // A declared body is required or has a default: a request without one gets a 422 (or the
    // default), and a handler never sees `undefined`.
    const flags = route.request?.body?.describe().flags as { presence?: string; default?: unknown } | undefined;
    if (route.request?.body && flags?.presence !== 'required' && !(flags && 'default' in flags)) {
      throw new Error(
        `${route.method.toUpperCase()} ${route.path}: its body schema must be .required() or have a .default()`,
      );
    }
    router[route.method](route.path, async (req: Request, res: Response) => {
      if (route.streamBody) res.setHeader('Connection', 'close');
      let principal = null;
      let traceWriter: TraceWriter | undefined;
      if (route.traceIngest && traceWriters && TraceWriters.presents(req))
        traceWriter = await traceWriters.identify(req);
      else if (route.auth === 'none') await admission.anonymous(req);
      // A probe answers whatever the database does: a credential that cannot be checked now
      // (the database is away) only costs the caller the admin's details.
      else if (route.auth === 'probe')
        principal = await admission
          .identify(req)
          .catch((err) => (isDatabaseUnavailable(err) ? null : Promise.reject(err)));
      else principal = await admission.authenticate(req, route.auth, route.admin ?? false);
      const inputs = validateRequest(route, req);
      const log = (req as Request & { log: Logger }).log;
      const result = await actingAs(actorOf(principal), () =>
        route.handler({
          ...inputs,
          principal,
          requestId: String(req.id),
          log,
          clientAddress: req.ip ?? req.socket.remoteAddress,
          ...(route.streamBody ? { bodyStream: req } : {}),
          ...(traceWriter ? { traceWriter } : {}),
        }),
      );
      for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, value);
      if (result.stream) {
        // The slot is taken before the headers go: past the bound the answer is still a 429.
        const slot = await streams?.acquire(
          principal?.keyId ? `key:${principal.keyId}` : `subject:${principal?.subject ?? req.ip}`,
        );
        try {
          return await serveEventStream(req, res, result.stream, log, shutdown);
        } finally {
          slot?.release();
        }
      }
      if (result.json !== undefined) res.status(result.status).type('application/json').send(result.json);
      else if (result.body === undefined) res.status(result.status).end();
      else res.status(result.status).json(result.body);
    });
  }
}
