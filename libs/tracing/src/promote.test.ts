import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { promote } from './promote.js';

function run(outputs: unknown, metadata: Record<string, unknown> = {}) {
  const id = randomUUID();
  const start = new Date().toISOString();
  const dotted = `${start.slice(0, 19).replace(/[-:]/g, '')}${start.slice(20, 23)}000Z${id}`;
  return promote(
    randomUUID(),
    randomUUID(),
    { id, trace_id: id, dotted_order: dotted, start_time: start, run_type: 'llm', outputs, extra: { metadata } },
    [],
  );
}
const tokens = (r: ReturnType<typeof run>) => [r.prompt_tokens, r.completion_tokens, r.total_tokens];

describe('token counts promoted from a run', () => {
  const usage = { input_tokens: 11, output_tokens: 4, total_tokens: 15 };

  it("reads a chat model's run as LangChain's tracer sends it: the first generation's message", () => {
    const serialized = {
      lc: 1,
      type: 'constructor',
      id: ['langchain_core', 'messages', 'AIMessage'],
      kwargs: { content: 'pong', usage_metadata: usage },
    };
    expect(tokens(run({ generations: [[{ text: 'pong', message: serialized }]], llm_output: {} }))).toEqual([
      11, 4, 15,
    ]);
    expect(
      tokens(run({ generations: [{ text: 'pong', message: { content: 'pong', usage_metadata: usage } }] })),
    ).toEqual([11, 4, 15]);
  });

  it('reads usage_metadata in the outputs or the metadata, and the legacy token_usage', () => {
    expect(tokens(run({ usage_metadata: usage }))).toEqual([11, 4, 15]);
    expect(tokens(run({}, { usage_metadata: { input_tokens: 2, output_tokens: 3 } }))).toEqual([2, 3, 5]);
    expect(tokens(run({ llm_output: { token_usage: { prompt_tokens: 7, completion_tokens: 1 } } }))).toEqual([7, 1, 8]);
  });

  it('counts nothing it cannot trust', () => {
    expect(tokens(run({ generations: 'x' }))).toEqual([null, null, null]);
    expect(
      tokens(
        run({ generations: [[{ message: { kwargs: { usage_metadata: { input_tokens: -1, output_tokens: 1.5 } } } }]] }),
      ),
    ).toEqual([null, null, 0]);
    expect(tokens(run(null))).toEqual([null, null, null]);
  });
});
