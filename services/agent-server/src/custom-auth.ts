// A project's custom auth handler (langgraph.json `auth.path`: an `Auth` of
// @langchain/langgraph-sdk/auth). The published server would register it and put its own auth
// middleware in front of every route, GET /ok included: a handler that refuses a request without
// a credential then refuses the runtime's health probe, and the revision never passes its health
// gate. So the host registers the handler itself, in the same module instance the server and the
// host's storage consult (handleAuthEvent, upstream.ts), and hands the server's own middleware
// to the host's app (http-app.ts), which runs before every route of the server, the host and the
// project; there it answers GET /ok unauthenticated. Every other request goes through the server's
// middleware unchanged: it leaves out /info and GET /ui/… (the server's own exemptions) and calls
// the handler's `authenticate` with the request as it came, headers and all.
import type { MiddlewareHandler } from 'hono';
import { apiModule } from './upstream.js';

export interface AuthConfig {
  path?: string;
  disable_studio_auth?: boolean;
}

/** Requests the handler never sees: the runtime's health probe. */
const isHealthProbe = (method: string, path: string) => method === 'GET' && path === '/ok';

/** Registers the handler of `auth` (relative to `cwd`); returns the middleware that applies it, none without one. */
export async function registerCustomAuth(
  auth: AuthConfig | undefined,
  cwd: string,
): Promise<MiddlewareHandler | undefined> {
  if (!auth?.path) return undefined;
  const [{ registerAuth }, { auth: serverAuth }] = await Promise.all([
    apiModule('auth/index.mjs'),
    apiModule('auth/custom.mjs'),
  ]);
  // The server lets `x-auth-scheme: langsmith` in as a Studio user, without the handler: it trusts
  // LangSmith's platform to have checked that caller. Nothing in front of an agent server here
  // checks it (the serving URL of a project with its own handler asks for no key), so the
  // header would let anyone past the handler: the handler decides for those requests too.
  await registerAuth({ ...auth, disable_studio_auth: true }, { cwd });
  const authenticate: MiddlewareHandler = serverAuth();
  return (c, next) => (isHealthProbe(c.req.method, c.req.path) ? next() : authenticate(c, next));
}
