import { describe, expect, it } from 'vitest';
import { readEventStream, type StreamMessage } from '../../services/console/app/api/sse.js';

/** The console's reader of server-sent events (it reads a streamed fetch: EventSource cannot send the key header). */

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const bytes = chunks.map((c) => new TextEncoder().encode(c));
  return new ReadableStream({
    pull(controller) {
      const next = bytes.shift();
      if (next) controller.enqueue(next);
      else controller.close();
    },
  });
}

async function read(chunks: string[]): Promise<StreamMessage[]> {
  const messages: StreamMessage[] = [];
  await readEventStream(streamOf(chunks), (m) => messages.push(m));
  return messages;
}

describe('readEventStream', () => {
  it('hands over each event with its id and type, whatever the chunk boundaries', async () => {
    const text =
      'id: 41\nevent: revision.status_changed\ndata: {"to":"DEPLOYED"}\n\n: keep-alive\n\nid: 42\ndata: {"a":1}\n\n';
    const whole = await read([text]);
    expect(whole).toEqual([
      { id: '41', event: 'revision.status_changed', data: '{"to":"DEPLOYED"}' },
      { id: '42', event: 'message', data: '{"a":1}' },
    ]);
    // Split at every byte: the same events.
    expect(await read(text.split(''))).toEqual(whole);
  });

  it('joins multi-line data, accepts CRLF and CR line ends, and skips comment-only blocks', async () => {
    const expected = [
      { id: null, event: 'message', data: 'one\ntwo' },
      { id: null, event: 'message', data: 'three' },
    ];
    expect(await read(['data: one\r\ndata: two\r\n\r\n', ':ping\r\rdata:three\r\r'])).toEqual(expected);
    // A CRLF split between two chunks is one line end, not two.
    expect(await read(['data: one\r', '\ndata: two\r', '\n\r', '\n:ping\r\rdata:three\r\r'])).toEqual(expected);
  });

  it('keeps multi-byte characters split across chunks intact, and drops an unfinished last event', async () => {
    const bytes = new TextEncoder().encode('data: café ✓\n\ndata: cut off');
    const chunks: Uint8Array[] = [bytes.slice(0, 10), bytes.slice(10, 14), bytes.slice(14)];
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks.shift();
        if (next) controller.enqueue(next);
        else controller.close();
      },
    });
    const messages: StreamMessage[] = [];
    await readEventStream(stream, (m) => messages.push(m));
    expect(messages).toEqual([{ id: null, event: 'message', data: 'café ✓' }]);
  });
});
