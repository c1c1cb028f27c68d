import { describe, expect, it } from 'vitest';
import { imageAgentServer } from './image-config.js';

describe('imageAgentServer', () => {
  it('is an agent server with LANGSERVE_GRAPHS in the environment, as langgraph build writes it', () => {
    expect(imageAgentServer({ env: { LANGSERVE_GRAPHS: '{"agent":"./graph.py:graph"}' } })).toEqual({
      auth_path: null,
    });
  });

  it('is one with the label dev.slipway.agent-server=true, and not with another value', () => {
    expect(imageAgentServer({ env: {}, labels: { 'dev.slipway.agent-server': 'true' } })).toEqual({ auth_path: null });
    expect(imageAgentServer({ env: {}, labels: { 'dev.slipway.agent-server': 'false' } })).toBeNull();
  });

  it("names the custom auth handler of LANGGRAPH_AUTH's path; one without a path is none", () => {
    const env = { LANGSERVE_GRAPHS: '{}', LANGGRAPH_AUTH: '{"path": "/deps/app/auth.py:auth"}' };
    expect(imageAgentServer({ env })).toEqual({ auth_path: '/deps/app/auth.py:auth' });
    expect(imageAgentServer({ env: { ...env, LANGGRAPH_AUTH: 'not json' } })).toEqual({ auth_path: null });
  });

  it('a plain image (no labels read yet, as cached before they were) is none', () => {
    expect(imageAgentServer({ env: { PATH: '/bin' } })).toBeNull();
  });
});
