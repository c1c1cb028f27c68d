import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'langsmith';
import pg from 'pg';
import { TenancyRepository } from '@slipway/db';
import {
  DEFAULT_INGEST_LIMITS,
  PayloadTooLargeError,
  RunReadRepository,
  TracingIngest,
  validateOperation,
} from '@slipway/tracing';
import { eventually } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Issue 34, first step: the LangSmith-compatible ingest and reads under /api/v1, driven by the
 * official `langsmith` client, unchanged, from this process. Its fetch is only observed (which
 * endpoint, which encoding), except in the fallback test, where it answers multipart with the
 * 404 a server without that endpoint gives.
 */

let api: TestApi;
let apiUrl: string;

interface Seen {
  method: string;
  path: string;
  encoding: string | null;
  status: number;
}

/** A langsmith client on the test api, recording what it sent. */
function client(options: { key?: string; gzip?: boolean; multipart404?: boolean } = {}): {
  client: Client;
  seen: Seen[];
} {
  const seen: Seen[] = [];
  const fetchImplementation = async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input instanceof Request ? input.url : input));
    const headers = new Headers(init?.headers);
    const method = init?.method ?? 'GET';
    if (options.multipart404 && url.pathname.endsWith('/runs/multipart')) {
      seen.push({ method, path: url.pathname, encoding: headers.get('content-encoding'), status: 404 });
      return new Response(JSON.stringify({ detail: 'Not Found' }), {
        status: 404,
        headers: { 'content-type': 'application/json' },
      });
    }
    const res = await fetch(input, init);
    seen.push({ method, path: url.pathname, encoding: headers.get('content-encoding'), status: res.status });
    return res;
  };
  // The client reads this once, when it is built: gzip off without touching what /info says.
  const before = process.env.LANGSMITH_DISABLE_RUN_COMPRESSION;
  process.env.LANGSMITH_DISABLE_RUN_COMPRESSION = options.gzip === false ? 'true' : 'false';
  try {
    const c = new Client({
      apiUrl,
      apiKey: options.key ?? api.adminKey,
      autoBatchTracing: true,
      fetchImplementation: fetchImplementation as typeof fetch,
    });
    return { client: c, seen };
  } finally {
    if (before === undefined) delete process.env.LANGSMITH_DISABLE_RUN_COMPRESSION;
    else process.env.LANGSMITH_DISABLE_RUN_COMPRESSION = before;
  }
}

/** `<time>Z<id>`: one dotted-order segment. */
function segment(at: Date, id: string): string {
  const iso = at.toISOString();
  return `${iso.slice(0, 19).replace(/[-:]/g, '')}${iso.slice(20, 23)}000Z${id}`;
}

/** A trace: a root chain and two llm children, created then ended (four creates, four updates). */
function trace(project: string) {
  const t0 = new Date(Date.now() - 5_000);
  const rootId = randomUUID();
  const root = {
    id: rootId,
    trace_id: rootId,
    dotted_order: segment(t0, rootId),
    name: 'agent',
    run_type: 'chain',
    start_time: t0.getTime(),
    inputs: { question: 'hi' },
    project_name: project,
    tags: ['prod'],
    extra: { metadata: { thread_id: 'th-1', revision_id: 'rev-1', tenant: 'acme' } },
  };
  const children = [1, 2].map((n) => {
    const id = randomUUID();
    const at = new Date(t0.getTime() + n * 100);
    return {
      id,
      trace_id: rootId,
      parent_run_id: rootId,
      dotted_order: `${root.dotted_order}.${segment(at, id)}`,
      name: `llm-${n}`,
      run_type: 'llm',
      start_time: at.getTime(),
      inputs: { n },
      project_name: project,
      extra: { metadata: { ls_model_name: 'gpt-test' } },
    };
  });
  return { root, children, runs: [root, ...children] };
}

async function send(c: Client, t: ReturnType<typeof trace>) {
  for (const run of t.runs) await c.createRun({ ...run });
  for (const [i, run] of t.children.entries()) {
    await c.updateRun(run.id, {
      trace_id: run.trace_id,
      dotted_order: run.dotted_order,
      parent_run_id: run.parent_run_id,
      end_time: Date.now(),
      outputs: {
        text: `answer ${i}`,
        usage_metadata: { input_tokens: 10 + i, output_tokens: 5, total_tokens: 15 + i },
      },
    });
  }
  await c.updateRun(t.root.id, {
    trace_id: t.root.id,
    dotted_order: t.root.dotted_order,
    end_time: Date.now(),
    outputs: { answer: 'done' },
  });
  await c.flush();
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

const count = async (table: string) => Number((await api.dataSource.query(`SELECT count(*) AS n FROM ${table}`))[0].n);

beforeAll(async () => {
  api = await startTestApi({ SLIPWAY_RATE_LIMIT_PER_KEY: '100000' });
  apiUrl = `${api.baseUrl}/api/v1`;
});

afterAll(async () => {
  await api?.close();
});

describe('the langsmith client against /api/v1', () => {
  it('writes through /runs/multipart with gzip, and the reads find the project and the trace in dotted order', async () => {
    const { client: c, seen } = client();
    const t = trace('tracing-gzip');
    await send(c, t);
    const multipart = seen.filter((s) => s.path === '/api/v1/runs/multipart');
    expect(multipart.length).toBeGreaterThan(0);
    expect(multipart.every((s) => s.status === 202 && s.encoding === 'gzip')).toBe(true);
    expect(seen.some((s) => s.path === '/api/v1/runs/batch')).toBe(false);

    const projects = await collect(c.listProjects({ name: 'tracing-gzip' }));
    expect(projects.map((p) => p.name)).toEqual(['tracing-gzip']);
    const project = await c.readProject({ projectName: 'tracing-gzip' });
    expect(project).toMatchObject({ id: projects[0]!.id, tenant_id: api.workspaceId, run_count: 3 });
    expect(await c.readProject({ projectId: project.id })).toMatchObject({ name: 'tracing-gzip' });

    const runs = await collect(c.listRuns({ projectName: 'tracing-gzip', traceId: t.root.id }));
    expect(runs.map((r) => r.id)).toEqual([t.root.id, t.children[0]!.id, t.children[1]!.id]);
    expect(runs.map((r) => r.dotted_order)).toEqual([...runs.map((r) => r.dotted_order!)].sort());
    expect(runs[1]).toMatchObject({
      session_id: project.id,
      status: 'success',
      prompt_tokens: 10,
      completion_tokens: 5,
      total_tokens: 15,
      parent_run_id: t.root.id,
      outputs: { text: 'answer 0' },
    });
    expect(runs[2]).toMatchObject({ prompt_tokens: 11, total_tokens: 16 });
    expect(runs[0]).toMatchObject({
      status: 'success',
      inputs: { question: 'hi' },
      outputs: { answer: 'done' },
      tags: ['prod'],
    });

    const root = await c.readRun(t.root.id);
    expect(root).toMatchObject({ id: t.root.id, name: 'agent', session_id: project.id, first_token_time: null });
    expect([...(root.child_run_ids ?? [])].sort()).toEqual(t.children.map((x) => x.id).sort());
    const [row] = await api.dataSource.query(`SELECT thread_id, revision_id, model FROM tracing_runs WHERE id = $1`, [
      t.root.id,
    ]);
    expect(row).toMatchObject({ thread_id: 'th-1', revision_id: 'rev-1', model: null });
    const [summary] = await api.dataSource.query(
      `SELECT run_count, total_tokens, status, name FROM tracing_traces WHERE trace_id = $1`,
      [t.root.id],
    );
    expect(summary).toMatchObject({ run_count: 3, total_tokens: '31', status: 'success', name: 'agent' });
  });

  it('writes through /runs/multipart without gzip', async () => {
    const { client: c, seen } = client({ gzip: false });
    const t = trace('tracing-plain');
    await send(c, t);
    const multipart = seen.filter((s) => s.path === '/api/v1/runs/multipart');
    expect(multipart.length).toBeGreaterThan(0);
    expect(multipart.every((s) => s.status === 202 && s.encoding === null)).toBe(true);
    const runs = await collect(c.listRuns({ projectName: 'tracing-plain', traceId: t.root.id }));
    expect(runs).toHaveLength(3);
    expect(runs.every((r) => r.status === 'success')).toBe(true);
  });

  it('falls back to /runs/batch when multipart answers 404, and the runs arrive complete', async () => {
    const { client: c, seen } = client({ gzip: false, multipart404: true });
    const t = trace('tracing-fallback');
    await send(c, t);
    expect(seen.some((s) => s.path === '/api/v1/runs/multipart' && s.status === 404)).toBe(true);
    expect(seen.filter((s) => s.path === '/api/v1/runs/batch').every((s) => s.status === 202)).toBe(true);
    const runs = await collect(c.listRuns({ projectName: 'tracing-fallback', traceId: t.root.id }));
    expect(runs.map((r) => r.id)).toEqual([t.root.id, t.children[0]!.id, t.children[1]!.id]);
    expect(runs[1]).toMatchObject({ status: 'success', total_tokens: 15, outputs: { text: 'answer 0' } });
  });

  it('merges a create and its update sent in separate batches, in either order', async () => {
    const { client: c } = client();
    const t0 = new Date(Date.now() - 1_000);
    const [a, b] = [randomUUID(), randomUUID()];
    const run = (id: string) => ({
      id,
      trace_id: id,
      dotted_order: segment(t0, id),
      name: `run-${id.slice(0, 4)}`,
      run_type: 'chain',
      start_time: t0.getTime(),
      inputs: { x: 1 },
      project_name: 'tracing-merge',
    });
    const update = (id: string) => ({
      trace_id: id,
      dotted_order: segment(t0, id),
      end_time: Date.now(),
      outputs: { y: 2 },
      error: id === b ? 'boom' : undefined,
    });
    // Create first, then update.
    await c.createRun(run(a));
    await c.flush();
    await c.updateRun(a, update(a));
    await c.flush();
    // Update first: kept until its create comes.
    await c.updateRun(b, update(b));
    await c.flush();
    expect(await count('tracing_pending_updates')).toBe(1);
    await expect(c.readRun(b)).rejects.toThrow(/404|not found/i);
    await c.createRun(run(b));
    await c.flush();
    expect(await count('tracing_pending_updates')).toBe(0);

    expect(await c.readRun(a)).toMatchObject({
      id: a,
      status: 'success',
      inputs: { x: 1 },
      outputs: { y: 2 },
      name: `run-${a.slice(0, 4)}`,
    });
    expect(await c.readRun(b)).toMatchObject({
      id: b,
      status: 'error',
      error: 'boom',
      inputs: { x: 1 },
      outputs: { y: 2 },
    });
    expect(
      Number(
        (await api.dataSource.query(`SELECT count(*) AS n FROM tracing_runs WHERE id = ANY($1::uuid[])`, [[a, b]]))[0]
          .n,
      ),
    ).toBe(2);
  });

  it('filters runs: is_root, run_type, error, start_time, has(tags), eq and metadata key/value', async () => {
    const { client: c } = client();
    const t = trace('tracing-filters');
    await send(c, t);
    const project = await c.readProject({ projectName: 'tracing-filters' });
    const ids = async (q: Record<string, unknown>) =>
      (await collect(c.listRuns({ projectId: project.id, ...q }))).map((r) => r.id).sort();
    expect(await ids({ isRoot: true })).toEqual([t.root.id]);
    expect(await ids({ runType: 'llm' })).toEqual(t.children.map((x) => x.id).sort());
    expect(await ids({ error: true })).toEqual([]);
    expect(await ids({ filter: 'has(tags, "prod")' })).toEqual([t.root.id]);
    expect(await ids({ filter: 'eq(name, "llm-1")' })).toEqual([t.children[0]!.id]);
    expect(await ids({ filter: 'and(eq(metadata_key, "tenant"), eq(metadata_value, "acme"))' })).toEqual([t.root.id]);
    expect(await ids({ filter: 'and(eq(metadata_key, "tenant"), eq(metadata_value, "other"))' })).toEqual([]);
    expect(await ids({ parentRunId: t.root.id })).toEqual(t.children.map((x) => x.id).sort());
    expect(await ids({ startTime: new Date(Date.now() + 60_000) })).toEqual([]);
    const bad = await api.http.post('/api/v1/runs/query', { session: [project.id], filter: 'drop(table)' });
    expect(bad.status).toBe(422);
  });

  it("reads a run's tokens with its descendants', as LangSmith does: the root's are the trace's", async () => {
    const start = new Date(Date.now() - 5_000);
    const [root, node, llmA, llmB, other] = Array.from({ length: 5 }, () => randomUUID());
    const rootOrder = segment(start, root!);
    const nodeOrder = `${rootOrder}.${segment(new Date(start.getTime() + 1), node!)}`;
    const at = (ms: number) => new Date(start.getTime() + ms).toISOString();
    const run = (id: string, parent: string | null, dotted: string, type: string, usage?: [number, number]) => ({
      id,
      trace_id: root,
      parent_run_id: parent,
      dotted_order: dotted,
      name: type,
      run_type: type,
      start_time: at(2),
      end_time: at(50),
      session_name: 'tree-tokens',
      outputs: usage
        ? { usage_metadata: { input_tokens: usage[0], output_tokens: usage[1], total_tokens: usage[0] + usage[1] } }
        : { ok: true },
    });
    const batch = {
      post: [
        run(root!, null, rootOrder, 'chain'),
        run(node!, root!, nodeOrder, 'chain'),
        run(llmA!, node!, `${nodeOrder}.${segment(new Date(start.getTime() + 2), llmA!)}`, 'llm', [10, 2]),
        run(llmB!, node!, `${nodeOrder}.${segment(new Date(start.getTime() + 3), llmB!)}`, 'llm', [5, 1]),
        run(other!, root!, `${rootOrder}.${segment(new Date(start.getTime() + 4), other!)}`, 'tool'),
      ],
    };
    expect((await api.http.post('/api/v1/runs/batch', batch)).status).toBe(202);
    const tokens = async (id: string) => {
      const r = (await api.http.get(`/api/v1/runs/${id}`)).body;
      return [r.prompt_tokens, r.completion_tokens, r.total_tokens];
    };
    expect(await tokens(root!)).toEqual([15, 3, 18]);
    expect(await tokens(node!)).toEqual([15, 3, 18]);
    expect(await tokens(llmA!)).toEqual([10, 2, 12]);
    expect(await tokens(other!)).toEqual([null, null, null]);
    const listed = (await api.http.post('/api/v1/runs/query', { trace: root, limit: 10 })).body.runs;
    expect(listed.map((r: { total_tokens: number | null }) => r.total_tokens)).toEqual([18, 18, 12, 6, null]);
  });

  it('answers 404 for an unknown run and project', async () => {
    const { client: c } = client();
    await expect(c.readRun(randomUUID())).rejects.toThrow(/404|not found/i);
    expect((await api.http.get(`/api/v1/runs/${randomUUID()}`)).status).toBe(404);
    expect((await api.http.get(`/api/v1/sessions/${randomUUID()}`)).status).toBe(404);
  });
});

describe('tenancy and refusals', () => {
  it("shows another workspace's key nothing, not even that a project exists", async () => {
    const { client: mine } = client();
    const t = trace('tracing-private');
    await send(mine, t);
    const project = await mine.readProject({ projectName: 'tracing-private' });
    const other = await new TenancyRepository(api.dataSource.manager).createWorkspace(
      api.organizationId,
      'tracing-other',
    );
    const otherKey = await api.mintKey({ workspaceId: other.id, role: 'admin' });
    const { client: theirs } = client({ key: otherKey });
    expect(await collect(theirs.listProjects({ name: 'tracing-private' }))).toEqual([]);
    expect(await collect(theirs.listProjects())).toEqual([]);
    await expect(theirs.readProject({ projectId: project.id })).rejects.toThrow(/404|not found/i);
    await expect(theirs.readRun(t.root.id)).rejects.toThrow(/404|not found/i);
    const query = await api.http.post(
      '/api/v1/runs/query',
      { session: [project.id], trace: t.root.id },
      { key: otherKey },
    );
    expect(query.status).toBe(200);
    expect(query.body.runs).toEqual([]);
    // Their write of a run with the same id goes to their own project and leaves ours alone.
    const same = { ...t.root, project_name: 'tracing-private', inputs: { question: 'theirs' } };
    await theirs.createRun(same);
    await theirs.flush();
    expect((await mine.readRun(t.root.id)).inputs).toEqual({ question: 'hi' });
    expect((await theirs.readRun(t.root.id)).inputs).toEqual({ question: 'theirs' });
    expect((await theirs.readRun(t.root.id)).session_id).not.toBe(project.id);
  });

  it("throttles one workspace's flood with 429 and Retry-After while another workspace's ingest goes through", async () => {
    const other = await new TenancyRepository(api.dataSource.manager).createWorkspace(
      api.organizationId,
      'tracing-calm',
    );
    const otherKey = await api.mintKey({ workspaceId: other.id, role: 'admin' });
    const runs = () =>
      Array.from({ length: 100 }, () => {
        const id = randomUUID();
        const at = new Date(Date.now() - 1_000);
        return {
          id,
          trace_id: id,
          dotted_order: segment(at, id),
          name: 'flood',
          run_type: 'chain',
          start_time: at.toISOString(),
          session_name: 'tracing-flood',
          inputs: { pad: 'x'.repeat(2_000) },
        };
      });
    const send = (key: string) =>
      fetch(`${apiUrl}/runs/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify({ post: runs() }),
      });
    const flood = await Promise.all(Array.from({ length: 48 }, () => send(api.adminKey)));
    const calm = await send(otherKey);
    const statuses = flood.map((r) => r.status);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 202 || s === 429)).toBe(true);
    expect(flood.find((r) => r.status === 429)!.headers.get('retry-after')).toBe('1');
    expect(calm.status).toBe(202);
  });

  describe('refused bodies write nothing', () => {
    const boundary = 'slipwayTestBoundary';
    const part = (name: string, body: string | Buffer) => {
      const data = Buffer.isBuffer(body) ? body : Buffer.from(body);
      return Buffer.concat([
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\nContent-Type: application/json; ` +
            `length=${data.length}\r\n\r\n`,
        ),
        data,
        Buffer.from('\r\n'),
      ]);
    };
    const close = Buffer.from(`--${boundary}--\r\n`);
    const validRun = (id = randomUUID()) => {
      const at = new Date();
      return {
        id,
        trace_id: id,
        dotted_order: segment(at, id),
        name: 'refused',
        run_type: 'chain',
        start_time: at.toISOString(),
        session_name: 'tracing-refused',
      };
    };
    /**
     * The status of a multipart POST. Node's client, not fetch: the server answers a body over
     * the limit before reading the rest and closes, and the answer must be read while the
     * upload is still cut short (fetch waits to finish sending first).
     */
    const post = (body: Buffer, headers: Record<string, string> = {}) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = http.request(`${apiUrl}/runs/multipart`, {
          method: 'POST',
          headers: {
            'content-type': `multipart/form-data; boundary=${boundary}`,
            'x-api-key': api.adminKey,
            'content-length': String(body.length),
            ...headers,
          },
        });
        req.on('response', (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, text }));
        });
        req.on('error', (err: NodeJS.ErrnoException) =>
          err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err),
        );
        req.end(body);
      });
    let before: number;

    beforeAll(async () => {
      before = await count('tracing_runs');
    });

    const nothingWritten = async () => {
      expect(await count('tracing_runs')).toBe(before);
      expect(
        (await api.dataSource.query(`SELECT count(*) AS n FROM tracing_projects WHERE name = 'tracing-refused'`))[0].n,
      ).toBe('0');
    };

    it('a bad key gets 401', async () => {
      const run = validRun();
      const res = await post(Buffer.concat([part(`post.${run.id}`, JSON.stringify(run)), close]), {
        'x-api-key': 'slw_not-a-key',
      });
      expect(res.status).toBe(401);
      await nothingWritten();
    });

    it('a body over the limit gets 413, plain or gzip', async () => {
      const run = validRun();
      const huge = Buffer.concat([
        part(`post.${run.id}`, JSON.stringify(run)),
        part(`post.${run.id}.inputs`, JSON.stringify({ blob: 'x'.repeat(25 * 1024 * 1024) })),
        close,
      ]);
      expect((await post(huge)).status).toBe(413);
      const bomb = gzipSync(huge);
      expect((await post(bomb, { 'content-encoding': 'gzip' })).status).toBe(413);
      await nothingWritten();
    });

    it('malformed multipart gets 422, and the valid runs beside it are not written', async () => {
      const good = validRun();
      const goodPart = part(`post.${good.id}`, JSON.stringify(good));
      for (const body of [
        Buffer.concat([goodPart]), // no closing boundary
        Buffer.concat([goodPart, part('post.not-a-uuid', '{}'), close]),
        Buffer.concat([goodPart, part(`post.${randomUUID()}.inputs`, '{}'), close]), // a field without its run
        Buffer.concat([goodPart, part(`post.${randomUUID()}`, '{not json'), close]),
        Buffer.concat([goodPart, Buffer.from(`--${boundary}\r\nno-colon-here\r\n\r\n{}\r\n`), close]),
        Buffer.concat([
          goodPart,
          part(`post.${good.id}.inputs`, '{"a":1}').subarray(0, 40),
          Buffer.from('\r\n'),
          close,
        ]),
      ]) {
        const res = await post(body);
        expect(res.status, res.text.slice(0, 200)).toBe(422);
      }
      expect((await post(gzipSync(goodPart).subarray(0, 10), { 'content-encoding': 'gzip' })).status).toBe(422);
      expect((await post(Buffer.concat([goodPart, close]), { 'content-type': 'text/plain' })).status).toBe(415);
      await nothingWritten();
    });

    it('NUL bytes get 422', async () => {
      const good = validRun();
      const bad = validRun();
      for (const body of [
        Buffer.concat([
          part(`post.${good.id}`, JSON.stringify(good)),
          part(`post.${bad.id}`, JSON.stringify({ ...bad, name: 'a\u0000b' })),
          close,
        ]),
        Buffer.concat([
          part(`post.${good.id}`, JSON.stringify(good)),
          part(`post.${good.id}.inputs`, Buffer.from('{"a":"x\u0000y"}')),
          close,
        ]),
      ]) {
        expect((await post(body)).status).toBe(422);
      }
      const batch = await api.http.post('/api/v1/runs/batch', {
        post: [good, { ...bad, inputs: { k: 'v\u0000' } }],
        patch: [],
      });
      expect(batch.status).toBe(422);
      await nothingWritten();
    });

    it('a 10,000-deep tree gets 422 past the depth kept, writing nothing of the refused request', async () => {
      // One chain, root first, sent as the client would in batches: each run's dotted order holds its whole path.
      const start = Date.now() - 60_000;
      const ids = Array.from({ length: 10_000 }, () => randomUUID());
      let dotted = '';
      const runs = ids.map((id, i) => {
        dotted = `${dotted ? `${dotted}.` : ''}${segment(new Date(start + i), id)}`;
        return {
          ...validRun(id),
          trace_id: ids[0],
          parent_run_id: i ? ids[i - 1] : null,
          dotted_order: dotted,
          start_time: new Date(start + i).toISOString(),
        };
      });
      const kept = runs.findIndex((r) => r.dotted_order.length > 2_560);
      expect(kept).toBeGreaterThan(30);
      // Deeper runs beside valid ones: the whole request is refused, saying why.
      const refused = await api.http.post('/api/v1/runs/batch', { post: runs.slice(0, kept + 5) });
      expect(refused.status).toBe(422);
      expect(refused.body.detail).toMatch(/dotted_order.*longer than 2560 characters/);
      const deepest = await api.http.post('/api/v1/runs/batch', { post: runs.slice(-20) });
      expect(deepest.status).toBe(422);
      await nothingWritten();
    });

    it('a field over the per-field cap is stored cut, and the run says so', async () => {
      const run = validRun();
      const res = await post(
        Buffer.concat([
          part(`post.${run.id}`, JSON.stringify({ ...run, session_name: 'tracing-cut' })),
          part(`post.${run.id}.inputs`, JSON.stringify({ blob: 'y'.repeat(2 * 1024 * 1024) })),
          close,
        ]),
      );
      expect(res.status).toBe(202);
      const got = await api.http.get(`/api/v1/runs/${run.id}`);
      expect(got.body).toMatchObject({
        truncated_fields: ['inputs'],
        inputs: { slipway_truncated: true, limit_bytes: 1024 * 1024 },
      });
    });
  });
});

describe('updates held before their create', () => {
  it('are refused (413) once what is held for a run would pass one body, and the held update is kept as it was', async () => {
    const ingest = new TracingIngest(api.dataSource, { ...DEFAULT_INGEST_LIMITS, maxBodyBytes: 20_000 });
    const id = randomUUID();
    const update = (key: string) =>
      validateOperation('update', { id, extra: { metadata: { [key]: 'x'.repeat(6_000) } } }, 'u');
    await ingest.write(api.workspaceId, [update('a')]);
    await ingest.write(api.workspaceId, [update('b')]);
    await expect(ingest.write(api.workspaceId, [update('c'), update('d')])).rejects.toBeInstanceOf(
      PayloadTooLargeError,
    );
    const [held] = await api.dataSource.query(
      `SELECT patch FROM tracing_pending_updates WHERE workspace_id = $1 AND run_id = $2`,
      [api.workspaceId, id],
    );
    expect(
      Object.keys(JSON.parse(typeof held.patch === 'string' ? held.patch : JSON.stringify(held.patch)).extra.metadata),
    ).toEqual(['a', 'b']);
  });
});

describe('child runs', () => {
  it("are the run's own trace's: a run of another project naming it as its parent is not one of them", async () => {
    const ingest = new TracingIngest(api.dataSource);
    const at = new Date();
    const segment = (id: string) =>
      `${at
        .toISOString()
        .replace(/[-:]/g, '')
        .replace(/\.(\d{3})Z$/, '$1000Z')}${id}`;
    const run = (id: string, fields: Record<string, unknown>) =>
      validateOperation(
        'create',
        {
          id,
          name: 'r',
          run_type: 'chain',
          start_time: at.toISOString(),
          trace_id: id,
          dotted_order: segment(id),
          ...fields,
        },
        'c',
      );
    const [root, child, stranger] = [randomUUID(), randomUUID(), randomUUID()];
    await ingest.write(api.workspaceId, [
      run(root, { session_name: 'children-a' }),
      run(child, {
        session_name: 'children-a',
        trace_id: root,
        parent_run_id: root,
        dotted_order: `${segment(root)}.${segment(child)}`,
      }),
      // Another project's run, in a trace of its own, that names the root as its parent.
      run(stranger, { session_name: 'children-b', parent_run_id: root }),
    ]);
    const read = await new RunReadRepository(api.dataSource.manager).get(api.workspaceId, root);
    expect(read?.child_run_ids).toEqual([child]);
  });
});

describe('a project name', () => {
  it('longer than 1,024 bytes is refused with 422 whatever its script, and nothing is written', async () => {
    const ingest = new TracingIngest(api.dataSource);
    const create = (session_name: string) =>
      validateOperation(
        'create',
        {
          id: randomUUID(),
          name: 'run',
          run_type: 'chain',
          start_time: new Date().toISOString(),
          session_name,
        },
        'c',
      );
    // 1,000 characters of a non-Latin script: within the field's 1,024 characters, 3,000 bytes.
    const long = '漢'.repeat(1_000);
    await expect(ingest.write(api.workspaceId, [create(long)])).rejects.toMatchObject({ status: 422 });
    const [{ count }] = await api.dataSource.query(
      `SELECT count(*)::int AS count FROM tracing_projects WHERE workspace_id = $1 AND name = $2`,
      [api.workspaceId, long],
    );
    expect(count).toBe(0);
    await ingest.write(api.workspaceId, [create('漢'.repeat(300))]);
  });
});

describe('a write whose runs other writes hold', () => {
  it('waits no longer than maxLockWaitMs, then is refused with 429 and writes nothing; once they are free it goes through', async () => {
    const ingest = new TracingIngest(api.dataSource, { ...DEFAULT_INGEST_LIMITS, maxLockWaitMs: 200 });
    const id = randomUUID();
    const update = validateOperation('update', { id, extra: { metadata: { held: true } } }, 'u');
    // Another write of the same run, still in its transaction: it holds the run's lock.
    const holder = api.dataSource.createQueryRunner();
    await holder.startTransaction();
    try {
      await holder.query(`SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || $2, 0))`, [
        api.workspaceId,
        `run:${id}`,
      ]);
      await expect(ingest.write(api.workspaceId, [update])).rejects.toMatchObject({ status: 429 });
    } finally {
      await holder.rollbackTransaction();
      await holder.release();
    }
    const held = () =>
      api.dataSource.query(`SELECT 1 FROM tracing_pending_updates WHERE workspace_id = $1 AND run_id = $2`, [
        api.workspaceId,
        id,
      ]);
    expect(await held()).toHaveLength(0);
    await ingest.write(api.workspaceId, [update]);
    expect(await held()).toHaveLength(1);
  });
});

describe('the daily partitions', () => {
  /** A root run created now, in a project named `project` (new: the write inserts it). */
  const rootRun = (project: string) => {
    const id = randomUUID();
    const at = new Date();
    return {
      id,
      trace_id: id,
      dotted_order: segment(at, id),
      name: 'agent',
      run_type: 'chain',
      start_time: at.toISOString(),
      session_name: project,
    };
  };

  it("a write waits for a day's partitions being created before it takes any table lock: no deadlock with that DDL", async () => {
    // This process has made today's partitions (its first write), so the write below makes none itself.
    expect((await api.http.post('/api/v1/runs/batch', { post: [rootRun('partitions-warm')] })).status).toBe(202);
    // Another writer creating a day's partitions, as ensurePartitions does, held uncommitted: a
    // partition of a table with a foreign key locks the key's table (tracing_projects) against writes.
    const ddl = new pg.Client({ connectionString: api.database.url });
    await ddl.connect();
    try {
      await ddl.query('BEGIN');
      await ddl.query(`SELECT pg_advisory_xact_lock(hashtext('slipway:tracing-partitions'))`);
      await ddl.query(
        `CREATE TABLE tracing_runs_p20990101 PARTITION OF tracing_runs ` +
          `FOR VALUES FROM ('2099-01-01 00:00:00+00') TO ('2099-01-02 00:00:00+00')`,
      );
      const ddlPid = (await ddl.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      // A write that inserts a new project, then reads the runs (every partition, the new one too).
      const write = api.http.post('/api/v1/runs/batch', { post: [rootRun('partitions-new-project')] });
      const waits = await eventually(
        async () =>
          (await api.dataSource.query(
            `SELECT l.pid, l.locktype FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                WHERE a.datname = current_database() AND NOT l.granted AND l.pid <> $1`,
            [ddlPid],
          )) as Array<{ pid: number; locktype: string }>,
        (rows) => rows.length > 0,
      );
      // It waits on the partitions' lock, holding no table: the DDL can finish.
      expect(waits.map((w) => w.locktype)).toEqual(['advisory']);
      const held = await api.dataSource.query(
        `SELECT c.relname FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
          WHERE l.pid = $1 AND l.granted AND l.locktype = 'relation'`,
        [waits[0]!.pid],
      );
      expect(held).toEqual([]);
      await ddl.query('ROLLBACK');
      expect((await write).status).toBe(202);
    } finally {
      await ddl.end();
    }
  });
});
