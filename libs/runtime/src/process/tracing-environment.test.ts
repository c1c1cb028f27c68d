import { describe, expect, it } from 'vitest';
import { tracingEnvironment } from './instance-environment.js';

const front = { endpoint: 'http://10.201.0.1:41234/api/v1', apiKey: 'slwt_abc' };
const base = { enabled: null, front, project: 'support-bot', revisionId: 'rev-1' };
const secrets = (entries: Record<string, string>) => Object.entries(entries).map(([name, value]) => ({ name, value }));

describe("an instance's tracing variables", () => {
  it("point the langsmith client at the deployment's trace front, project and revision", () => {
    expect(tracingEnvironment({ ...base, secrets: [] })).toEqual({
      LANGSMITH_TRACING: 'true',
      LANGSMITH_ENDPOINT: front.endpoint,
      LANGSMITH_API_KEY: front.apiKey,
      LANGSMITH_PROJECT: 'support-bot',
      LANGCHAIN_REVISION_ID: 'rev-1',
    });
    // A user's endpoint or project without a key of their own does not redirect the deployment's traces.
    expect(
      tracingEnvironment({ ...base, secrets: secrets({ LANGSMITH_ENDPOINT: 'https://x', LANGSMITH_PROJECT: 'p' }) }),
    ).toMatchObject({
      LANGSMITH_ENDPOINT: front.endpoint,
      LANGSMITH_PROJECT: 'support-bot',
    });
  });

  it('are left out when the deployment or a secret turns tracing off', () => {
    expect(tracingEnvironment({ ...base, enabled: false, secrets: [] })).toEqual({});
    expect(tracingEnvironment({ ...base, secrets: secrets({ LANGSMITH_TRACING: 'false' }) })).toEqual({});
    expect(tracingEnvironment({ ...base, secrets: secrets({ LANGCHAIN_TRACING_V2: ' FALSE ' }) })).toEqual({});
    expect(
      tracingEnvironment({ ...base, enabled: true, secrets: secrets({ LANGSMITH_TRACING: 'true' }) }),
    ).toMatchObject({ LANGSMITH_API_KEY: front.apiKey });
  });

  it("keep a user's own LangSmith and add the trace front as a second write target", () => {
    const own = tracingEnvironment({
      ...base,
      secrets: secrets({ LANGSMITH_API_KEY: 'lsv2_mine', LANGSMITH_PROJECT: 'mine' }),
    });
    expect(own).toEqual({
      LANGSMITH_TRACING: 'true',
      LANGCHAIN_REVISION_ID: 'rev-1',
      LANGSMITH_RUNS_ENDPOINTS: expect.any(String),
    });
    expect(JSON.parse(own.LANGSMITH_RUNS_ENDPOINTS!)).toEqual([
      { api_url: 'https://api.smith.langchain.com', api_key: 'lsv2_mine', project_name: 'mine' },
      { api_url: front.endpoint, api_key: front.apiKey, project_name: 'support-bot' },
    ]);
    const selfHosted = tracingEnvironment({
      ...base,
      secrets: secrets({ LANGCHAIN_API_KEY: 'k', LANGSMITH_ENDPOINT: 'https://ls.example/api/v1' }),
    });
    expect(JSON.parse(selfHosted.LANGSMITH_RUNS_ENDPOINTS!)[0]).toEqual({
      api_url: 'https://ls.example/api/v1',
      api_key: 'k',
    });
  });

  it('keep the write targets a user listed in LANGSMITH_RUNS_ENDPOINTS, in either form', () => {
    const listed = (value: string) =>
      JSON.parse(
        tracingEnvironment({ ...base, secrets: secrets({ LANGSMITH_API_KEY: 'k', LANGSMITH_RUNS_ENDPOINTS: value }) })
          .LANGSMITH_RUNS_ENDPOINTS!,
      );
    expect(listed('[{"api_url":"https://a","api_key":"1","project_name":"p"},{"bad":true}]')).toEqual([
      { api_url: 'https://a', api_key: '1', project_name: 'p' },
      { api_url: front.endpoint, api_key: front.apiKey, project_name: 'support-bot' },
    ]);
    expect(listed('{"https://a":"1","https://b":"2"}').map((e: { api_url: string }) => e.api_url)).toEqual([
      'https://a',
      'https://b',
      front.endpoint,
    ]);
    expect(listed('not json')[0]).toEqual({ api_url: 'https://api.smith.langchain.com', api_key: 'k' });
  });
});
