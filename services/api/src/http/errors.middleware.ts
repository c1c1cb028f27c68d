import type { ErrorRequestHandler, RequestHandler } from 'express';
import { AppError } from '@slipway/domain';
import { isDatabaseUnavailable } from '@slipway/db';
import type { Logger } from '@slipway/logging';
import type { RouteSpec } from './route.js';
import { RequestValidationError } from './validation-error.js';

interface BodyParserError {
  type?: string;
  limit?: number;
  status?: number;
}

/**
 * The one error → response mapping (CONTRACT C2). Operational errors show their message;
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
      res.status(err.status).json({ detail: err.message });
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
    if (isDatabaseUnavailable(err)) {
      log?.error({ err }, 'database unavailable');
      res.status(503).setHeader('Retry-After', '5').json({ detail: 'The database is unavailable; nothing was changed. Retry shortly.' });
      return;
    }
    log?.error({ err }, 'unhandled error');
    res.status(500).json({ detail: 'Internal server error.' });
  };
}

/** A route path (`/v2/x/:id`) as a regex matching it with or without the `/api-host` prefix. */
export function routePattern(path: string): RegExp {
  const escaped = path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:([A-Za-z0-9_]+)/g, '[^/]+');
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
