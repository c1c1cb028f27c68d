// A queue worker (SLIPWAY_AGENT_SERVER_ROLE=queue, a revision whose resource_spec enables queue
// workers): it serves no API. It registers the project's graphs as the server would, runs the
// published server's own worker loop (`queue` of @langchain/langgraph-api) `jobs` times over the
// host's storage, so runs are claimed from the leased queue exactly as an all-in-one instance
// claims them, and answers GET /ok on its PORT (the runtime's health probe) and nothing else.
import { createServer, type Server } from 'node:http';
import type { Ops } from '@langchain/langgraph-api/storage';
import { apiModule } from './upstream.js';

export interface QueueWorkerOptions {
  host: string;
  port: number;
  cwd: string;
  graphs: Record<string, string | { path: string }>;
  /** Worker loops: runs this process executes at once. */
  jobs: number;
}

/** Starts the worker loops and the health probe; resolves once the probe listens. */
export async function startQueueWorker(ops: Ops, options: QueueWorkerOptions): Promise<{ close: () => Promise<void> }> {
  const [{ registerFromEnv }, { queue }] = await Promise.all([apiModule('graph/load.mjs'), apiModule('queue.mjs')]);
  const specs = Object.fromEntries(
    Object.entries(options.graphs).map(([id, spec]) => [id, typeof spec === 'string' ? spec : spec.path]),
  );
  await registerFromEnv(ops.assistants, specs, { cwd: options.cwd });
  // Each loop claims a run, runs it, and claims the next; they end with the process.
  for (let i = 0; i < options.jobs; i++) void queue(ops);
  const server: Server = createServer((req, res) => {
    const ok = req.method === 'GET' && req.url?.split('?')[0] === '/ok';
    res.writeHead(ok ? 200 : 404, { 'content-type': 'application/json' });
    res.end(ok ? '{"ok":true}' : '{"detail":"A queue worker serves no API: call the deployment URL."}');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
