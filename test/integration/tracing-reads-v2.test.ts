import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TenancyRepository } from '@slipway/db';
import { langsmithClient } from '../support/langsmith.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The LangSmith reads that `langsmith` 0.12 moved to `/api/v2` (`client.runs.query()`, `client.runs.retrieve()`),
 * called through the official client, unchanged: fields chosen by `selects`, keyset pages that neither skip nor repeat
 * (runs started in the same millisecond), a trace in tree order, the trace and tree filters, the default time window, a
 * run's own tokens unless subtree usage is asked for, and workspace isolation.
 */

let api: TestApi;
let projectId: string;

/** `YYYYMMDDTHHMMSSffffffZ<id>`: a dotted-order segment at `iso` (a time to the millisecond). */
function segment(iso: string, id: string): string {
  const [whole, fraction = ''] = iso.replace('Z', '').split('.');
  return `${whole!.replace(/[-:]/g, '')}${fraction.padEnd(6, '0')}Z${id}`;
}

interface Spec {
  name: string;
  at: string;
  parent?: { id: string; dotted_order: string; trace_id: string };
  run_type?: string;
  error?: string;
  tokens?: [number, number];
  tags?: string[];
}

/** A run create as the client sends it, ended a second after it started. */
function run(spec: Spec) {
  const id = randomUUID();
  const dotted = spec.parent ? `${spec.parent.dotted_order}.${segment(spec.at, id)}` : segment(spec.at, id);
  return {
    id,
    trace_id: spec.parent?.trace_id ?? id,
    parent_run_id: spec.parent?.id,
    dotted_order: dotted,
    name: spec.name,
    run_type: spec.run_type ?? 'chain',
    start_time: spec.at,
    end_time: new Date(Date.parse(spec.at) + 1000).toISOString(),
    session_name: 'v2-reads',
    inputs: { q: spec.name },
    outputs: spec.tokens
      ? {
          usage_metadata: {
            input_tokens: spec.tokens[0],
            output_tokens: spec.tokens[1],
            total_tokens: spec.tokens[0] + spec.tokens[1],
          },
        }
      : { a: spec.name },
    ...(spec.error ? { error: spec.error } : {}),
    tags: spec.tags ?? [],
    extra: { metadata: { thread_id: `th-${spec.name}` } },
  };
}

const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

let a: { root: ReturnType<typeof run>; llm: ReturnType<typeof run>; tool: ReturnType<typeof run> };
let b: { root: ReturnType<typeof run>; llm: ReturnType<typeof run> };
let old: ReturnType<typeof run>;
let ties: Array<ReturnType<typeof run>>;

beforeAll(async () => {
  api = await startTestApi({ SLIPWAY_RATE_LIMIT_PER_KEY: '100000' });
  const aRoot = run({ name: 'agent-a', at: ago(60_000), tags: ['prod'] });
  a = {
    root: aRoot,
    llm: run({ name: 'llm-1', at: ago(59_000), parent: aRoot, run_type: 'llm', tokens: [10, 5] }),
    tool: run({ name: 'tool', at: ago(58_000), parent: aRoot, run_type: 'tool', error: 'boom' }),
  };
  const bRoot = run({ name: 'agent-b', at: ago(50_000) });
  b = { root: bRoot, llm: run({ name: 'llm-2', at: ago(49_000), parent: bRoot, run_type: 'llm', tokens: [20, 4] }) };
  old = run({ name: 'agent-old', at: ago(3 * 24 * 3600_000) });
  // Four roots a millisecond apart, the middle two in the very same millisecond: newest first,
  // two to a page, that pair straddles the first page's end.
  const base = Date.now() - 40_000;
  ties = [0, 1, 1, 2].map((ms, i) => run({ name: `tie-${i}`, at: new Date(base + ms).toISOString() }));
  const res = await api.http.post('/api/v1/runs/batch', { post: [a.root, a.llm, a.tool, b.root, b.llm, old, ...ties] });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  const [row] = await api.dataSource.query(
    `SELECT id FROM tracing_projects WHERE workspace_id = $1 AND name = 'v2-reads'`,
    [api.workspaceId],
  );
  projectId = row.id;
});

afterAll(async () => {
  await api?.close();
});

async function all<T>(pages: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of pages) out.push(x);
  return out;
}

describe("langsmith's client.runs against /api/v2", () => {
  it('reads one trace in tree order with the selected fields, a page at a time, each run once', async () => {
    const client = langsmithClient(api.baseUrl, api.adminKey);
    const selects = [
      'NAME',
      'RUN_TYPE',
      'STATUS',
      'DOTTED_ORDER',
      'IS_ROOT',
      'PARENT_RUN_IDS',
      'PROMPT_TOKENS',
      'TOTAL_TOKENS',
      'ERROR',
      'THREAD_ID',
      'LATENCY_SECONDS',
      'INPUTS',
    ] as const;
    const runs = await all(
      client.runs.query({ project_ids: [projectId], trace_id: a.root.id, selects: [...selects], page_size: 1 }),
    );
    expect(runs.map((r) => r.id)).toEqual([a.root.id, a.llm.id, a.tool.id]);
    expect(runs.map((r) => r.dotted_order)).toEqual([a.root.dotted_order, a.llm.dotted_order, a.tool.dotted_order]);
    expect(runs[0]).toMatchObject({
      name: 'agent-a',
      run_type: 'CHAIN',
      status: 'SUCCESS',
      is_root: true,
      parent_run_ids: [],
      total_tokens: null,
      inputs: { q: 'agent-a' },
      latency_seconds: 1,
    });
    expect(runs[1]).toMatchObject({
      status: 'SUCCESS',
      is_root: false,
      parent_run_ids: [a.root.id],
      prompt_tokens: 10,
      total_tokens: 15,
    });
    expect(runs[2]).toMatchObject({ status: 'ERROR', error: 'boom', thread_id: 'th-tool' });
    // Fields not selected are not sent.
    expect(Object.keys(runs[0]!).sort()).toEqual(['id', ...selects.map((s) => s.toLowerCase())].sort());
  });

  it("sends only ids without selects, and a root's subtree tokens only when asked", async () => {
    const client = langsmithClient(api.baseUrl, api.adminKey);
    const ids = await all(client.runs.query({ project_ids: [projectId], is_root: true }));
    expect(ids.every((r) => Object.keys(r).join() === 'id')).toBe(true);
    const own = await all(client.runs.query({ project_ids: [projectId], ids: [b.root.id], selects: ['TOTAL_TOKENS'] }));
    expect(own).toEqual([{ id: b.root.id, total_tokens: null }]);
    const tree = await all(
      client.runs.query({
        project_ids: [projectId],
        ids: [b.root.id],
        selects: ['TOTAL_TOKENS', 'PROMPT_TOKENS'],
        include_subtree_usage: true,
      }),
    );
    expect(tree).toEqual([{ id: b.root.id, total_tokens: 24, prompt_tokens: 20 }]);
  });

  it('pages newest first by start time, two at a time, without skipping or repeating runs started in the same millisecond', async () => {
    const client = langsmithClient(api.baseUrl, api.adminKey);
    const roots = await all(
      client.runs.query({ project_ids: [projectId], is_root: true, selects: ['NAME', 'START_TIME'], page_size: 2 }),
    );
    const got = roots.map((r) => r.id);
    expect(new Set(got).size).toBe(got.length);
    // The two runs of the same millisecond come in id order (descending, as the rest), across a page boundary.
    const pair = [ties[1]!.id, ties[2]!.id].sort().reverse();
    expect(got).toEqual([ties[3]!.id, ...pair, ties[0]!.id, b.root.id, a.root.id]);
  });

  it('keeps to the last day unless asked, and filters by trace root, by any run of the tree, by filter and by error', async () => {
    const client = langsmithClient(api.baseUrl, api.adminKey);
    const names = async (q: Parameters<typeof client.runs.query>[0]) =>
      (await all(client.runs.query({ project_ids: [projectId], selects: ['NAME'], ...q }))).map((r) => r.name).sort();
    expect(await names({ is_root: true })).not.toContain('agent-old');
    expect(await names({ is_root: true, min_start_time: ago(4 * 24 * 3600_000) })).toContain('agent-old');
    expect(await names({ trace_filter: 'eq(name, "agent-b")' })).toEqual(['agent-b', 'llm-2']);
    expect(await names({ tree_filter: 'eq(name, "tool")' })).toEqual(['agent-a', 'llm-1', 'tool']);
    expect(await names({ filter: 'has(tags, "prod")' })).toEqual(['agent-a']);
    expect(await names({ has_error: true })).toEqual(['tool']);
    expect(await names({ run_type: 'LLM', max_start_time: ago(55_000) })).toEqual(['llm-1']);
  });

  it('retrieves one run of a project with its own tokens; another project, an unknown id or another workspace: 404', async () => {
    const client = langsmithClient(api.baseUrl, api.adminKey);
    const root = await client.runs.retrieve(a.root.id, {
      project_id: projectId,
      selects: ['NAME', 'STATUS', 'TOTAL_TOKENS', 'OUTPUTS', 'METADATA', 'PROJECT_ID', 'TRACE_ID'],
    });
    expect(root).toEqual({
      id: a.root.id,
      name: 'agent-a',
      status: 'SUCCESS',
      total_tokens: null,
      outputs: { a: 'agent-a' },
      metadata: { thread_id: 'th-agent-a' },
      project_id: projectId,
      trace_id: a.root.id,
    });
    await expect(client.runs.retrieve(a.root.id, { project_id: randomUUID() })).rejects.toMatchObject({ status: 404 });
    await expect(client.runs.retrieve(randomUUID(), { project_id: projectId })).rejects.toMatchObject({ status: 404 });
    const other = await new TenancyRepository(api.dataSource.manager).createWorkspace(api.organizationId, 'v2-other');
    const theirs = langsmithClient(api.baseUrl, await api.mintKey({ workspaceId: other.id, role: 'member' }));
    await expect(theirs.runs.retrieve(a.root.id, { project_id: projectId })).rejects.toMatchObject({ status: 404 });
    expect(await all(theirs.runs.query({ project_ids: [projectId], min_start_time: ago(4 * 24 * 3600_000) }))).toEqual(
      [],
    );
  });

  it(
    'refuses what it does not answer: 422 for datasets, a bad filter or a forged cursor; ' +
      'an unknown select or no project; 401 without a key',
    async () => {
      const post = (body: unknown, key?: string) =>
        api.http.post('/api/v2/runs/query', body, key === undefined ? undefined : { key });
      expect((await post({ project_ids: [projectId], reference_dataset_id: randomUUID() })).status).toBe(422);
      expect((await post({ project_ids: [projectId], filter: 'eq(' })).status).toBe(422);
      const forged = Buffer.from(
        JSON.stringify({ startTime: "2026-01-01'; DROP TABLE x; --", id: randomUUID() }),
      ).toString('base64url');
      expect((await post({ project_ids: [projectId], cursor: forged })).status).toBe(422);
      expect((await post({ project_ids: [projectId], cursor: 'not a cursor' })).status).toBe(422);
      // A tree-order cursor does not resume a time-ordered query.
      const page = await post({ project_ids: [projectId], trace_id: a.root.id, page_size: 1 });
      expect(page.status).toBe(200);
      expect(page.body.next_cursor).toEqual(expect.any(String));
      expect((await post({ project_ids: [projectId], cursor: page.body.next_cursor })).status).toBe(422);
      expect((await post({ project_ids: [projectId], selects: ['PASSWORD'] })).status).toBe(422);
      expect((await post({})).status).toBe(422);
      const anonymous = await fetch(`${api.baseUrl}/api/v2/runs/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ project_ids: [projectId] }),
      });
      expect(anonymous.status).toBe(401);
    },
  );

  it("advertises the LangSmith API level the client checks before client.runs, and Slipway's own version beside it", async () => {
    const info = (await (await fetch(`${api.baseUrl}/api/v1/info`)).json()) as {
      version: string;
      slipway_version: string;
    };
    expect(info.version).toBe('0.16.0');
    expect(info.slipway_version).toEqual(expect.any(String));
  });
});
