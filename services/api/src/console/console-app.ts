import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type RequestHandler, type Router } from 'express';

export const CONSOLE_PATH = '/console';

/**
 * The deployment page the published deploy CLIs print as "View status" after a deploy against a
 * local host: `<host>/o/<tenant id>/host/deployments/<deployment id>`.
 */
const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
const CLI_STATUS_PAGE = new RegExp(`^/o/([^/]+)/host/deployments/(${UUID})/?$`);
const IS_UUID = new RegExp(`^${UUID}$`);

/**
 * The ways into the console besides `/console/` itself, under each path prefix: `/` (the site's
 * front page) and the deploy CLIs' "View status" link, which lands on that deployment's page.
 * A plain middleware, not routes: these are pages, not operations of the JSON API. Locations are
 * built from our own prefix and a matched UUID, never from other parts of the request.
 */
export function consoleEntrances(prefixes: readonly string[]): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    for (const prefix of prefixes) {
      if (prefix && !(req.path === prefix || req.path.startsWith(`${prefix}/`))) continue;
      const rest = req.path.slice(prefix.length) || '/';
      if (rest === '/') return res.redirect(302, `${prefix}${CONSOLE_PATH}/`);
      const status = CLI_STATUS_PAGE.exec(rest);
      if (status) {
        // The tenant (workspace) id, when it is one, preselects the workspace for an organization key.
        const tenant = IS_UUID.test(status[1]!) ? `?workspace=${status[1]!.toLowerCase()}` : '';
        return res.redirect(302, `${prefix}${CONSOLE_PATH}/#/deployments/${status[2]!.toLowerCase()}${tenant}`);
      }
    }
    next();
  };
}

/**
 * The console's own policy, stricter than the rest of the service: only its own scripts, styles
 * and API calls (no inline script or style element, no CDN, no eval), never framed. React sets
 * inline styles through the DOM, which this policy allows.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "font-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join('; ');

export const CONSOLE_NOT_BUILT = 'The console is not built: run `pnpm build` (npm start and npm test build it too).';

/**
 * Where the built console lies: a `console` folder beside the bundle in a production package
 * (infra/scripts/build.mjs), else `services/console/dist` seen from the api bundle
 * (`services/api/dist`) or from this file's source (`services/api/src/console`).
 */
export function consoleDirectory(): string | null {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [
    path.resolve(here, '../console'),
    path.resolve(here, '../../console/dist'),
    path.resolve(here, '../../../console/dist'),
  ];
  return candidates.find((dir) => existsSync(path.join(dir, 'index.html'))) ?? null;
}

/**
 * Serves the built single-page console. Its files need no key: the page asks for one and sends
 * it on its own API calls. Hashed assets are cached for good, index.html never (so a new build
 * is picked up at once).
 */
export function consoleApp(anonymous: RequestHandler, dir: string | null = consoleDirectory()): Router {
  const router = express.Router();
  router.use(anonymous, (_req, res, next) => {
    res.setHeader('Content-Security-Policy', CONSOLE_CSP);
    res.setHeader('Referrer-Policy', 'no-referrer');
    next();
  });
  // `/console` → `/console/`, so the page's relative asset URLs resolve under it.
  // The location is built from the mount path (ours), never from what the client sent.
  router.use((req, res, next) => {
    const pathname = req.originalUrl.split('?', 1)[0]!;
    if (req.path === '/' && !pathname.endsWith('/')) return res.redirect(301, `${req.baseUrl}/`);
    next();
  });
  if (!dir) {
    router.use((_req, res) => void res.status(503).json({ detail: CONSOLE_NOT_BUILT }));
    return router;
  }
  router.use(
    express.static(dir, {
      index: 'index.html',
      fallthrough: true,
      setHeaders: (res, file) => {
        const immutable = file.includes(`${path.sep}assets${path.sep}`);
        res.setHeader('Cache-Control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
      },
    }),
  );
  return router;
}
