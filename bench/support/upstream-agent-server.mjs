// The baseline of the agent-server scenario: upstream's own server (@langchain/langgraph-api's
// startServer, the same installed copy the Slipway host runs) with its default in-memory storage,
// serving the same graph config. Started by bench/support/agent-server.ts as its own process:
//   node upstream-agent-server.mjs <graph config file> <host package dir>
// with PORT set. It prints nothing of its own; the server logs as it does under `langgraph dev`.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';

const [configFile, hostDir] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(hostDir), 'package.json'));
const apiDir = path.dirname(require.resolve('@langchain/langgraph-api/package.json'));
const { startServer, StartServerSchema } = await import(pathToFileURL(path.join(apiDir, 'dist/server.mjs')).href);
const config = JSON.parse(readFileSync(configFile, 'utf8'));
await startServer(
  StartServerSchema.parse({
    port: Number(process.env.PORT),
    host: '127.0.0.1',
    cwd: path.dirname(path.resolve(configFile)),
    // As many runs at once as a Slipway process that runs graphs (N_JOBS_PER_WORKER's default).
    nWorkers: 10,
    graphs: config.graphs,
  }),
);
