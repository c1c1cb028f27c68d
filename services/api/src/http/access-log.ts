import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Logger } from '@slipway/logging';

declare module 'http' {
  interface IncomingMessage {
    /** The request's id (`X-Request-Id`): the caller's when short and plain, else a new UUID. */
    id: string;
    /** A logger whose lines carry the request (`req: { id, method, url }`), made on first use. */
    log: Logger;
  }
}

/** Accept a caller's request id only when it is short and plain, so it is safe to log and echo. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface AccessLogOptions {
  /** What the line shows of the URL (credentials in a path are replaced). */
  redactUrl: (url: string) => string;
  /** Requests that get no line (probes, metrics scrapes). */
  ignore: (url: string) => boolean;
}

/**
 * The request id and the access log: one JSON line per request when its response is finished
 * (`request completed`; `request errored` for a 5xx, at error; a 4xx at warn) or when the client
 * went away first (`request aborted`), with `req: { id, method, url }`, `res: { statusCode }` and
 * `responseTime` in ms. Only what an operator needs: never headers or bodies, where credentials
 * live. `req.log` is a child logger carrying the same `req`, made only when something logs
 * through it: most requests never do, and a child per request was a tenth of a read's CPU.
 */
export function accessLog(logger: Logger, { redactUrl, ignore }: AccessLogOptions): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    res.setHeader('X-Request-Id', id);
    const url = req.url;
    const fields = { id, method: req.method, url: redactUrl(url) };
    let child: Logger | undefined;
    req.id = id;
    Object.defineProperty(req, 'log', { get: () => (child ??= logger.child({ req: fields })), configurable: true });
    if (!ignore(url)) {
      const line = () => {
        res.removeListener('close', line);
        res.removeListener('finish', line);
        const statusCode = res.statusCode;
        const responseTime = Math.round(performance.now() - started);
        const entry = { req: fields, res: { statusCode }, responseTime };
        if (!res.writableFinished) logger.warn(entry, 'request aborted');
        else if (statusCode >= 500) logger.error(entry, 'request errored');
        else if (statusCode >= 400) logger.warn(entry, 'request completed');
        else logger.info(entry, 'request completed');
      };
      res.once('finish', line);
      res.once('close', line);
    }
    next();
  };
}
