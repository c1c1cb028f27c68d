// The parts of the published server (@langchain/langgraph-api) the host's storage works with:
// its auth hooks, graph loader, logger and the checkpointer/store singletons it runs graphs with.
// They are not in the package's exports map, so they load from its dist directory, the same
// module instances the server itself uses.
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
export const API_DIR = path.dirname(require.resolve('@langchain/langgraph-api/package.json'));

/** Imports `dist/<file>` of the installed server. */
export const apiModule = (file: string): Promise<any> => import(pathToFileURL(path.join(API_DIR, 'dist', file)).href);

const [auth, runAuth, load, logging, serde, checkpoint, store, command] = await Promise.all([
  apiModule('auth/index.mjs'),
  apiModule('utils/run-auth.mjs'),
  apiModule('graph/load.mjs'),
  apiModule('logging.mjs'),
  apiModule('utils/serde.mjs'),
  apiModule('storage/checkpoint.mjs'),
  apiModule('storage/store.mjs'),
  apiModule('command.mjs'),
]);

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the server's own type, opaque to the host
export type AuthContext = any;
type AuthFilters = Record<string, unknown> | undefined;

/** Runs the custom auth handler of `event`: its filters, and the value it may have changed. */
export const handleAuthEvent: (auth: AuthContext, event: string, value: any) => Promise<[AuthFilters, any]> =
  auth.handleAuthEvent;
export const isAuthMatching: (metadata: unknown, filters: AuthFilters) => boolean = auth.isAuthMatching;
/** Stamps the caller onto a run's config (`configurable.langgraph_auth_user`, `_user_id`, `_permissions`), as POST /runs does. */
export const applyAuthToRunConfig: (
  config: { configurable?: Record<string, unknown> },
  auth: AuthContext,
) => string | undefined = runAuth.applyAuthToRunConfig;
export const getGraph: (graphId: string, config: unknown, options: any) => Promise<any> = load.getGraph;
/** The assistant id a graph id stands for (an assistant id is returned as is). */
export const getAssistantId: (assistantOrGraphId: string) => string = load.getAssistantId;
export const NAMESPACE_GRAPH: string = load.NAMESPACE_GRAPH;
export const logger: { info: (...a: any[]) => void; warn: (...a: any[]) => void; error: (...a: any[]) => void } =
  logging.logger;
export const serializeError: (error: unknown) => { error: string; message: string } = serde.serializeError;
export const checkpointer: any = checkpoint.checkpointer;
export const graphStore: any = store.store;
export const getLangGraphCommand: (command: unknown) => unknown = command.getLangGraphCommand;
