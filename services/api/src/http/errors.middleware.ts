import type { ErrorRequestHandler, RequestHandler } from 'express';
import { AppError, RequestValidationError } from '@slipway/domain';
import { isDataException, isDatabaseUnavailable, sqlStateOf } from '@slipway/db';
import type { Logger } from '@slipway/logging';
import type { RouteSpec } from './route.js';
import { UNSUPPORTED_CHARACTER_MSG } from './input-guard.js';
import { type Source, type ValidationIssue } from '../schemas/validation-error.js';

interface BodyParserError {
  type?: string;
  limit?: number;
  status?: number;
  expose?: boolean;
}

/** SQLSTATEs of values Postgres refused, as the validation issue the api should have raised. */
const DATA_EXCEPTIONS: Record<string, Omit<ValidationIssue, 'loc'>> = {
  '22021': { type: 'string_unsupported_character', msg: UNSUPPORTED_CHARACTER_MSG },
  '22P05': { type: 'string_unsupported_character', msg: UNSUPPORTED_CHARACTER_MSG },
  '22P02': { type: 'value_error', msg: 'Value error, a value is not valid for its type' },
  '22001': { type: 'string_too_long', msg: 'String is too long to be stored' },
  '22003': { type: 'value_error', msg: 'Value error, a number is out of range' },
};
const OTHER_DATA_EXCEPTION: Omit<ValidationIssue, 'loc'> = {
  type: 'value_error',
  msg: 'Value error, a value could not be stored',
};

/** Where a value the database refused most likely came from: the body when there is one. */
function likelySource(req: { body?: unknown; query?: unknown }): Source {
  return req.body !== undefined && req.body !== null ? 'body' : 'query';
}

/**
 * The one error → response mapping (docs/api.md, Errors). Operational errors show their message;
 * anything else is a bug: logged with its stack, answered with a fixed 500 text.
 */
export function errorHandler(): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const log = (req as { log?: Logger }).log;
    if (res.headersSent) {
      log?.error({ err }, 'error after response started');
      res.end();
      return;
    }
    if (err instanceof RequestValidationError) {
      res.status(422).json({ detail: err.issues });
      return;
    }
    if (err instanceof AppError) {
      if (err.retryAfterSeconds != null) res.setHeader('Retry-After', String(err.retryAfterSeconds));
      res.status(err.status).json({ detail: err.message });
      return;
    }
    // Express could not percent-decode a path segment (e.g. `%ED%A0%80`, a lone surrogate).
    if (err instanceof URIError) {
      res
        .status(422)
        .json({ detail: [{ loc: ['path'], msg: UNSUPPORTED_CHARACTER_MSG, type: 'string_unsupported_character' }] });
      return;
    }
    const parserError = err as BodyParserError;
    switch (parserError.type) {
      case 'entity.parse.failed':
        res.status(422).json({ detail: [{ loc: ['body'], msg: 'JSON decode error', type: 'json_invalid' }] });
        return;
      case 'entity.too.large':
        res.status(413).json({ detail: `Request body is larger than the limit of ${parserError.limit} bytes.` });
        return;
      case 'encoding.unsupported':
      case 'charset.unsupported':
        res.status(415).json({ detail: 'Unsupported request body encoding.' });
        return;
    }
    // The safety net behind request validation: a value Postgres refused is the caller's input,
    // never a 500. Logged as an error all the same: validation should have caught it first.
    if (isDataException(err)) {
      log?.error({ err }, 'the database refused a value that passed validation');
      const issue = DATA_EXCEPTIONS[sqlStateOf(err)!] ?? OTHER_DATA_EXCEPTION;
      res.status(422).json({ detail: [{ loc: [likelySource(req)], ...issue }] });
      return;
    }
    if (isDatabaseUnavailable(err)) {
      log?.error({ err }, 'database unavailable');
      res
        .status(503)
        .setHeader('Retry-After', '5')
        .json({ detail: 'The database is unavailable; nothing was changed. Retry shortly.' });
      return;
    }
    // Other client errors raised by Express or its parsers (an aborted or mis-sized body).
    if (
      typeof parserError.status === 'number' &&
      parserError.status >= 400 &&
      parserError.status < 500 &&
      parserError.expose !== false
    ) {
      res.status(parserError.status).json({ detail: 'The request could not be read.' });
      return;
    }
    log?.error({ err }, 'unhandled error');
    res.status(500).json({ detail: 'Internal server error.' });
  };
}

/** A route path (`/v2/x/:id`) as a regex matching it with or without the `/api-host` prefix. */
export function routePattern(path: string): RegExp {
  const escaped = path
    .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    .replace(/:([A-Za-z0-9_]+)/g, '[^/]+')
    .replace(/\\\*([A-Za-z0-9_]+)/g, '.+');
  return new RegExp(`^(?:/api-host)?${escaped}/?$`);
}

/**
 * After every route: 405 with `Allow` when the path exists under another method, else 404.
 */
export function notFoundHandler(routes: readonly RouteSpec[]): RequestHandler {
  const patterns = routes.map((r) => ({ method: r.method.toUpperCase(), regex: routePattern(r.path) }));
  return (req, res) => {
    const allowed = [...new Set(patterns.filter((p) => p.regex.test(req.path)).map((p) => p.method))];
    if (allowed.length) {
      if (allowed.includes('GET')) allowed.push('HEAD');
      res.status(405).setHeader('Allow', allowed.join(', ')).json({ detail: 'Method Not Allowed' });
      return;
    }
    res.status(404).json({ detail: 'Not Found' });
  };
}
