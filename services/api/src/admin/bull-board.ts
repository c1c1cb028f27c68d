import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import express, { type Express, type Request, type RequestHandler } from 'express';
import { AppError, ForbiddenError } from '@slipway/domain';
import type { Queues } from '@slipway/jobs';
import type { Admission } from '../http/admission.js';

/** Where Bull Board lives, under each path prefix (`/admin/queues`, `/api-host/admin/queues`). */
export const BULL_BOARD_PATH = '/admin/queues';
/** Makes a browser show its native login prompt; the password is an admin API key. */
export const BASIC_CHALLENGE = 'Basic realm="Slipway admin"';
export const CROSS_SITE_REFUSED = 'Cross-site requests to the queue dashboard are refused.';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The API key carried by `Authorization: Basic`: the password, or the user name when it is empty. */
function keyFromBasic(authorization: string | undefined): string | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return undefined;
  const password = decoded.slice(colon + 1);
  // `curl -u <key>:` sends the key as the user name; a browser prompt fills the password.
  return password || decoded.slice(0, colon) || undefined;
}

/**
 * A browser sends Basic credentials by itself, to any site's request, so a page elsewhere could
 * make an admin's browser pause or empty a queue. Refuse unsafe methods that a browser marks as
 * coming from another origin. Keys sent in headers are not ambient and need no such check.
 */
function isCrossSite(req: Request): boolean {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') return true;
  const origin = req.headers.origin;
  if (!origin) return false;
  try {
    return new URL(origin).host !== req.headers.host;
  } catch {
    return true;
  }
}

/**
 * Organization admins only: the board shows and acts on every workspace's jobs, so a workspace
 * admin may not use it. The key comes as `X-Api-Key`, `Authorization: Bearer`, or
 * `Authorization: Basic` with the key as password. Every 401 carries the Basic challenge so a person's browser asks for
 * the key; errors go to the one error middleware for the contract's `{detail}` bodies.
 */
export function adminAuth(admission: Admission): RequestHandler {
  return async (req, res, next) => {
    const basicKey = keyFromBasic(req.headers.authorization);
    // An explicit X-Api-Key wins, as it does for the API; Basic only stands in for it.
    const headers = basicKey && !req.headers['x-api-key'] ? { ...req.headers, 'x-api-key': basicKey } : req.headers;
    try {
      await admission.authenticate(req, 'organization', 'organization', headers);
    } catch (err) {
      if (err instanceof AppError && err.status === 401) res.setHeader('WWW-Authenticate', BASIC_CHALLENGE);
      throw err;
    }
    if (headers !== req.headers && !SAFE_METHODS.has(req.method) && isCrossSite(req)) {
      throw new ForbiddenError(CROSS_SITE_REFUSED);
    }
    next();
  };
}

export interface BullBoardDeps {
  queues: Queues;
  admission: Admission;
  /** Path prefix the board is mounted under (`''` or `/api-host`): its pages link to it. */
  prefix: string;
}

/**
 * Bull Board over every queue, read/write, behind admin auth, as a sub-app to
 * mount at `${prefix}${BULL_BOARD_PATH}`. One board per prefix: the UI builds its asset and API
 * URLs from its base path, so a board reached as `/api-host/admin/queues` must link there too.
 */
export function bullBoardApp({ queues, admission, prefix }: BullBoardDeps): Express {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(`${prefix}${BULL_BOARD_PATH}`);
  createBullBoard({
    queues: Object.values(queues).map((queue) => new BullMQAdapter(queue, { readOnlyMode: false })),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Slipway' } },
  });
  const board: Express = serverAdapter.getRouter();
  board.disable('x-powered-by');
  // Mounted as an app (not a router) so Express restores `req`/`res` when the board passes on.
  const app = express();
  app.disable('x-powered-by');
  app.use(adminAuth(admission), board);
  return app;
}
