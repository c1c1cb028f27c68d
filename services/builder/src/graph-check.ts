import { constants } from 'node:fs';
import { open, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { builderModulesDir, type BuildJail } from './build-sandbox.js';
import { BuildError } from './build-steps.js';
import { CommandAbortedError, runShellCommand } from './run-command.js';

/**
 * The program that checks a project's graphs, run with the project's own code in a child process
 * (never in the builder): for each graph it imports the file (TypeScript through tsx, as the agent
 * server does) and looks at the export. An export is accepted when it is what the LangGraph.js
 * server can serve: a compiled graph, a StateGraph it compiles itself, or a function returning
 * one (called per run with the run's config). Results go to a file, not stdout, which the
 * project's own code may write to.
 */
const CHECK_PROGRAM = `
import { stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [cwd, graphsJson, out] = process.argv.slice(-3);
const isObject = (v) => typeof v === 'object' && v !== null;
const isCompiled = (v) => isObject(v) && isObject(v.builder) && typeof v.invoke === 'function';
const isGraph = (v) => isCompiled(v) || (isObject(v) && typeof v.compile === 'function') || (isObject(v) && isCompiled(v.graph));
const describe = (v) =>
  v === null ? 'null' : Array.isArray(v) ? 'an array'
  : isObject(v) ? 'an object (' + (v.constructor?.name ?? 'Object') + ')' : 'a ' + typeof v;
const firstLine = (err) => String(err instanceof Error ? err.message : err).split('\\n').find((l) => l.trim()) ?? 'unknown error';
// A TypeScript file that does not compile: tsx (esbuild) throws "Transform failed with 1 error:"
// with what and where on the next line, "<absolute file>:<line>:<column>: ERROR: <text>".
const compileError = (err, cwd) => {
  const m = /^Transform failed with \\d+ errors?:\\n(.+?):(\\d+):(\\d+): ERROR: (.+)/.exec(String(err?.message ?? ''));
  return m ? 'it does not compile: ' + path.relative(cwd, m[1]) + ':' + m[2] + ':' + m[3] + ': ' + m[4] : null;
};

const results = [];
for (const [id, spec] of Object.entries(JSON.parse(graphsJson))) {
  const cut = spec.lastIndexOf(':');
  const file = spec.slice(0, cut);
  const name = spec.slice(cut + 1) || 'default';
  const full = path.resolve(cwd, file);
  let problem = null;
  if (!(await stat(full).then((s) => s.isFile(), () => false))) {
    problem = 'the file ' + file + ' does not exist (after install and build)';
  } else {
    try {
      const mod = await import(pathToFileURL(full).href);
      if (!(name in mod)) {
        const names = Object.keys(mod).filter((k) => k !== '__esModule');
        problem = file + ' has no export named ' + JSON.stringify(name) + ' (its exports: ' + (names.join(', ') || 'none') + ')';
      } else {
        const value = await mod[name];
        if (typeof value !== 'function' && !isGraph(value)) {
          problem = 'the export ' + JSON.stringify(name) + ' of ' + file +
            ' is not a graph (a StateGraph, compiled or not): it is ' + describe(value);
        }
      }
    } catch (err) {
      problem = 'importing ' + file + ' failed: ' + (compileError(err, cwd) ?? firstLine(err)).slice(0, 400);
    }
  }
  results.push({ id, spec, problem });
}
await writeFile(out, JSON.stringify(results));
process.exit(0);
`;

interface GraphCheckResult {
  id: string;
  spec: string;
  problem: string | null;
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Longest a graph check may take: importing a graph builds it, which should take seconds. */
const CHECK_TIMEOUT_MS = 120_000;

export interface GraphCheckOptions {
  /** Where the graph config lives; graph paths are relative to it. */
  appDir: string;
  /** Scratch directory for the program and its result. */
  workDir: string;
  graphs: Record<string, string>;
  env: Record<string, string>;
  signal: AbortSignal;
  onLine: (line: string) => void;
  /** Where the check runs: the build's sandbox, or (opt-out) this process's user. */
  jail: BuildJail;
}

/** Largest result file read back: a few lines per graph. */
const MAX_RESULT_BYTES = 1024 * 1024;

/**
 * Imports every graph of the project in a child process and fails the build naming the first
 * graph that does not resolve: its id, its path and export, and the cause (missing file,
 * missing export, not a graph, import threw).
 */
export async function checkGraphs(options: GraphCheckOptions): Promise<void> {
  const { jail } = options;
  const program = path.join(options.workDir, 'check-graphs.mjs');
  const out = path.join(options.workDir, 'check-graphs.json');
  // Written by this process into a directory earlier steps could write to: whatever they left
  // under these names (a link to a file of ours) is removed, never followed.
  await rm(program, { force: true });
  await rm(out, { force: true });
  await writeFile(program, CHECK_PROGRAM, { flag: 'wx', mode: 0o644 });
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  const timeout = AbortSignal.timeout(CHECK_TIMEOUT_MS);
  const command = [
    'node',
    '--import',
    quote(tsx),
    quote(jail.inside(program)),
    quote(jail.inside(options.appDir)),
    quote(JSON.stringify(options.graphs)),
    quote(jail.inside(out)),
  ].join(' ');
  await jail.prepare();
  let result;
  try {
    result = await runShellCommand({
      command,
      cwd: options.appDir,
      launch: jail.launch(command, options.appDir, [await builderModulesDir()]),
      env: options.env,
      signal: AbortSignal.any([options.signal, timeout]),
      onLine: (line) => line.length && options.onLine(line),
    });
  } catch (err) {
    if (err instanceof CommandAbortedError && timeout.aborted && !options.signal.aborted) {
      throw new BuildError(
        `Checking the graphs took longer than ${CHECK_TIMEOUT_MS / 1000} s: does a graph module wait for something at import?`,
      );
    }
    throw err;
  }
  let results: GraphCheckResult[];
  try {
    results = JSON.parse(await readResult(out)) as GraphCheckResult[];
  } catch {
    const cause = await jail.killedBecause();
    const how = cause
      ? `was killed: ${cause}`
      : result.exitCode !== null
        ? `exited with code ${result.exitCode}`
        : `was killed by ${result.signal}`;
    throw new BuildError(
      `Checking the graphs failed: loading them ${how} before every graph was checked (see the build log).`,
    );
  }
  const broken = results.find((r) => r.problem);
  if (broken) throw new BuildError(`Graph '${broken.id}' (${broken.spec}) cannot be served: ${broken.problem}.`);
}

/** The check's result file: a regular file, not a link (the check ran as the deployment's uid). */
async function readResult(file: string): Promise<string> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const info = await handle.stat();
    if (!info.isFile() || info.size > MAX_RESULT_BYTES) throw new Error('not a result file');
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}
