import { describe, expect, it } from 'vitest';
import { GraphConfigError, parseGraphConfig, validateGraphConfig } from './graph-config.js';

const problemsOf = (input: unknown): string[] => {
  try {
    validateGraphConfig(input);
  } catch (err) {
    expect(err).toBeInstanceOf(GraphConfigError);
    return (err as GraphConfigError).problems;
  }
  throw new Error('expected the config to be refused');
};

describe('graph config (langgraph.json)', () => {
  it('accepts a typical Node config and keeps unknown keys', () => {
    const config = validateGraphConfig({
      node_version: '20',
      graphs: { agent: './src/agent.ts:graph', other: { path: './src/other.ts:app', description: 'second' } },
      dependencies: ['.'],
      env: '.env',
      dockerfile_lines: ['RUN true'],
      http: { app: './src/app.ts:app' },
      something_new: { kept: true },
    });
    expect(config.graphs).toEqual({ agent: './src/agent.ts:graph', other: './src/other.ts:app' });
    expect(config.node_version).toBe('20');
    expect(config.something_new).toEqual({ kept: true });
  });

  it('reads node_version given as a number, and env as an object', () => {
    const config = validateGraphConfig({ graphs: { a: 'a.js:g' }, node_version: 22, env: { A: 'b' } });
    expect(config.node_version).toBe('22');
    expect(config.env).toEqual({ A: 'b' });
  });

  it('lists every problem, each naming its key', () => {
    const problems = problemsOf({
      graphs: { agent: 'no-export-here', ok: 'a.js:g', bad: 3 },
      node_version: '18',
      dependencies: 'x',
      env: 5,
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/"graphs\.agent" must be an import string '<file>:<export>'/),
        expect.stringMatching(/"graphs\.bad" must be an import string/),
        expect.stringMatching(/"node_version" must be one of "20", "22", "24"/),
        expect.stringMatching(/"dependencies" must be an array/),
        expect.stringMatching(/"env" must be a path to an env file or an object/),
      ]),
    );
    expect(problems).toHaveLength(5);
  });

  it('requires graphs, with at least one entry', () => {
    expect(problemsOf({ dependencies: ['.'] })).toEqual(['"graphs" is required']);
    expect(problemsOf({ graphs: {} })).toEqual(['"graphs" must name at least one graph']);
    expect(problemsOf([])).toEqual(['"value" must be of type object']);
  });

  it('puts the file name and all problems in the message', () => {
    expect(() => parseGraphConfig('{"graphs": {"a": "x"}, "node_version": "16"}', 'apps/agent/langgraph.json')).toThrow(
      /^Graph config file 'apps\/agent\/langgraph\.json' is invalid: "graphs\.a" must be .*; "node_version" must be one of/,
    );
  });

  it('says so when the file is not JSON', () => {
    expect(() => parseGraphConfig('{"graphs": ', 'langgraph.json')).toThrow(
      /^Graph config file 'langgraph\.json' is not valid JSON \(/,
    );
  });
});
