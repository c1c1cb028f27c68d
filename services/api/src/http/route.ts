import type { Readable } from 'node:stream';
import type Joi from 'joi';
import type { Logger } from '@slipway/logging';
import type { AdminRequirement, AuthRequirement, Principal } from '../auth/principal.js';
import type { TraceWriter } from '../auth/trace-writers.js';
import type { EventStream } from '../services/event-sink.js';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** What a handler sees: validated, converted inputs and who is calling. */
export interface RequestContext<P = Record<string, string>, Q = Record<string, unknown>, B = unknown> {
  params: P;
  query: Q;
  body: B;
  /** Null only on `auth: 'none'` routes, and on probes called without a credential. */
  principal: Principal | null;
  requestId: string;
  log: Logger;
  /** Raw request headers, plus the validated ones of `request.headers` (converted values). */
  headers: Record<string, any>;
  /** The caller's address (`req.ip`: X-Forwarded-For only from trusted proxies). */
  clientAddress?: string;
  /** The unparsed request body, on `streamBody` routes only. */
  bodyStream?: Readable;
  /** On `traceIngest` routes called with a trace-ingest credential instead of a key: the one project it may write. */
  traceWriter?: TraceWriter;
}

/** A handler's answer. `body` undefined with 204 sends no body. */
export interface HandlerResult {
  status: number;
  body?: unknown;
  /** Set instead of `body`: the body already serialized as JSON (a large answer kept serialized between requests). */
  json?: string;
  headers?: Record<string, string>;
  /** Set instead of `body` to answer with Server-Sent Events (`status` and `body` are then ignored). */
  stream?: EventStream;
}

export interface ResponseSpec {
  description: string;
  schema?: Joi.Schema;
  /** `application/json` unless set (`text/event-stream` for event streams). */
  contentType?: string;
}

/**
 * One route: everything needed to mount it, validate it and document it. The router, the
 * validator and /openapi.json all read this same object, so the docs cannot drift.
 */
export interface RouteSpec<P = any, Q = any, B = any> {
  method: HttpMethod;
  /** Express syntax (`/v2/listeners/:listener_id`). */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  auth: AuthRequirement;
  /** Admins only: `true` any admin, `'organization'` an admin of the whole organization. */
  admin?: AdminRequirement;
  request?: {
    params?: Joi.ObjectSchema;
    query?: Joi.ObjectSchema;
    body?: Joi.Schema;
    /** Lower-case header names; unknown headers are ignored. */
    headers?: Joi.ObjectSchema;
  };
  responses: Record<number, ResponseSpec>;
  /** Set for routes that are not JSON APIs (docs UI): kept out of the OpenAPI document. */
  hidden?: boolean;
  /**
   * The body is a byte stream (uploads): it bypasses the JSON parser and reaches the handler
   * as `ctx.bodyStream`; the connection closes after the response, so the unread rest of a
   * refused body is not drained into a kept-alive connection.
   */
  streamBody?: boolean;
  /**
   * Trace ingest: besides the credentials `auth` names, the route takes a deployment's
   * trace-ingest credential (TraceWriters), binding the request to that deployment's project.
   */
  traceIngest?: boolean;
  handler: (ctx: RequestContext<P, Q, B>) => Promise<HandlerResult> | HandlerResult;
}

/** Identity function that gives handlers typed params, query and body. */
export function defineRoute<P = Record<string, string>, Q = Record<string, unknown>, B = unknown>(
  spec: RouteSpec<P, Q, B>,
): RouteSpec<P, Q, B> {
  return spec;
}

export const ok = (body: unknown): HandlerResult => ({ status: 200, body });
export const created = (body: unknown): HandlerResult => ({ status: 201, body });
export const noContent = (): HandlerResult => ({ status: 204 });
export const eventStream = (stream: EventStream): HandlerResult => ({ status: 200, stream });

/** The workspace of a `workspace` route; the authenticator guarantees it is set there. */
export function workspaceOf(ctx: RequestContext<any, any, any>): string {
  const id = ctx.principal?.workspaceId;
  if (!id) throw new Error('workspaceOf() called on a route without a workspace');
  return id;
}

export function principalOf(ctx: RequestContext<any, any, any>): Principal {
  if (!ctx.principal) throw new Error('principalOf() called on an unauthenticated route');
  return ctx.principal;
}
