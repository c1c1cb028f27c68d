import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unsandboxedJail } from './build-sandbox.js';
import { checkGraphs } from './graph-check.js';

/**
 * The graph check runs a real node child process (with tsx for TypeScript) on a small project.
 * The "graphs" here are objects shaped like compiled graphs (the check recognises graphs by
 * shape, as the LangGraph.js server does); real LangGraph projects are built in test/e2e.
 */
let root: string;
let app: string;
let work: string;

const FILES: Record<string, string> = {
  'package.json': JSON.stringify({ name: 'g', type: 'module' }),
  'src/good.ts': 'const n: number = 1;\nexport const graph = { builder: { nodes: n }, invoke: async () => ({}) };\n',
  'src/factory.mjs': 'export const make = async () => ({ builder: {}, invoke() {} });\n',
  'src/plain.mjs': 'export const graph = { hello: "world" };\nexport const other = 1;\n',
  'src/throws.ts': "throw new Error('no API key at import');\n",
  'src/broken.js': "import './does-not-exist.js';\nexport const graph = 1;\n",
  'src/typo.ts': 'export const graph: unknown = {\n  nodes: [1, 2\n};\n',
  'src/noisy.mjs': "console.log('hello from the graph');\nexport const graph = { compile() {} };\n",
};

beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'slipway-graph-check-'));
  app = path.join(root, 'app');
  work = path.join(root, 'work');
  mkdirSync(work, { recursive: true });
  for (const [file, text] of Object.entries(FILES)) {
    mkdirSync(path.dirname(path.join(app, file)), { recursive: true });
    writeFileSync(path.join(app, file), text);
  }
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const check = (graphs: Record<string, string>, lines: string[] = []) =>
  checkGraphs({
    appDir: app,
    workDir: work,
    graphs,
    env: { PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin` },
    jail: unsandboxedJail({ home: work, npmCache: work }),
    signal: new AbortController().signal,
    onLine: (l) => lines.push(l),
  });

describe('checkGraphs', () => {
  it('accepts compiled graphs, StateGraphs and graph factories, TypeScript included', async () => {
    const lines: string[] = [];
    await expect(
      check({ a: './src/good.ts:graph', b: './src/factory.mjs:make', c: './src/noisy.mjs:graph' }, lines),
    ).resolves.toBeUndefined();
    expect(lines).toContain('hello from the graph');
  });

  it('names the graph, path and export of a missing export', async () => {
    await expect(check({ a: './src/good.ts:graph', agent: './src/plain.mjs:grpah' })).rejects.toThrow(
      'Graph \'agent\' (./src/plain.mjs:grpah) cannot be served: ./src/plain.mjs has no export named "grpah" (its exports: graph, other).',
    );
  });

  it('refuses an export that is not a graph', async () => {
    await expect(check({ agent: './src/plain.mjs:graph' })).rejects.toThrow(
      'Graph \'agent\' (./src/plain.mjs:graph) cannot be served: the export "graph" of ./src/plain.mjs ' +
        'is not a graph (a StateGraph, compiled or not): it is an object (Object).',
    );
  });

  it('reports a graph that throws at import with its error', async () => {
    await expect(check({ agent: './src/throws.ts:graph' })).rejects.toThrow(
      "Graph 'agent' (./src/throws.ts:graph) cannot be served: importing ./src/throws.ts failed: no API key at import.",
    );
  });

  it('reports a broken import', async () => {
    await expect(check({ agent: './src/broken.js:graph' })).rejects.toThrow(
      /^Graph 'agent' \(\.\/src\/broken\.js:graph\) cannot be served: importing \.\/src\/broken\.js failed: Cannot find module/,
    );
  });

  it('reports a TypeScript file that does not compile with the compiler error and where it is', async () => {
    await expect(check({ agent: './src/typo.ts:graph' })).rejects.toThrow(
      "Graph 'agent' (./src/typo.ts:graph) cannot be served: importing ./src/typo.ts failed: " +
        'it does not compile: src/typo.ts:3:0: Expected "]" but found "}".',
    );
  });

  it('reports a missing file', async () => {
    await expect(check({ agent: './src/nope.ts:graph' })).rejects.toThrow(
      "Graph 'agent' (./src/nope.ts:graph) cannot be served: the file ./src/nope.ts does not exist (after install and build).",
    );
  });
});
