// The host's HTTP layer in front of the published server's routes (its `http.app` hook, which is
// mounted before them): a project's custom auth handler (custom-auth.ts), the routes the host
// serves itself (crons), /info's flags, and a run's
// event stream answers with a `Location` naming where to re-join
// it, so the SDK reconnects (with Last-Event-ID, on any instance) when a connection drops.
// A project's own `http.app` is mounted behind it, unchanged.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Hono, type MiddlewareHandler } from 'hono';

const RUN_PATH = /^(\/threads\/[^/]+\/runs\/[^/]+|\/runs\/[^/]+)(\/stream)?$/;

/** Set by `prepareHostApp` before the server imports this module's `hostApp`. */
export let hostApp: Hono | undefined;

/** The `http.app` value the server is given: this module's `hostApp`. */
export const HOST_APP_SPEC = `${fileURLToPath(import.meta.url)}:hostApp`;

/**
 * Builds `hostApp`: `authenticate` (the project's auth handler, if it has one) in front of every
 * route, the host's own routes (`mount`), then the project's own app (`file:export`, relative to
 * `cwd`). GET /info reports `flags` merged over the published server's.
 */
export async function prepareHostApp(
  projectApp: string | undefined,
  cwd: string,
  mount: (app: Hono) => void,
  flags: Record<string, boolean>,
  authenticate?: MiddlewareHandler,
): Promise<void> {
  const app = new Hono();
  if (authenticate) app.use('*', authenticate);
  app.use('*', async (c, next) => {
    await next();
    if (!c.res.headers.get('content-type')?.startsWith('text/event-stream')) return;
    const at = (c.res.headers.get('content-location') ?? new URL(c.req.url).pathname).match(RUN_PATH);
    if (at) c.res.headers.set('location', `${at[1]}/stream`);
  });
  app.get('/info', async (c, next) => {
    await next();
    if (c.res.status !== 200) return;
    const info = (await c.res
      .clone()
      .json()
      .catch(() => null)) as { flags?: Record<string, boolean> } | null;
    // A project's own app may answer /info itself: only the server's answer (with its flags) changes.
    if (typeof info?.flags !== 'object') return;
    // The headers stay: a project's middleware may have set its own on the way out.
    const headers = new Headers(c.res.headers);
    headers.delete('content-length');
    c.res = undefined;
    c.res = new Response(JSON.stringify({ ...info, flags: { ...info.flags, ...flags } }), { status: 200, headers });
  });
  mount(app);
  if (projectApp) {
    const [file, exportName = 'default'] = projectApp.split(':', 2);
    const module = await import(pathToFileURL(path.resolve(cwd, file!)).href);
    if (!module[exportName]) throw new Error(`Failed to load HTTP app: ${projectApp}`);
    app.route('/', module[exportName]);
  }
  hostApp = app;
}
