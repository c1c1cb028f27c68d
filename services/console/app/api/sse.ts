/** One server-sent event (the `text/event-stream` format: id, event, data lines). */
export interface StreamMessage {
  id: string | null;
  event: string;
  data: string;
}

const LINE_END = /\r\n|\r|\n/;

/**
 * Reads a `text/event-stream` body and hands over each complete event. Comment lines (the
 * server's keep-alives) and retry hints are skipped; an event the stream ends in the middle of
 * is dropped.
 */
export async function readEventStream(
  body: ReadableStream<Uint8Array>,
  onMessage: (m: StreamMessage) => void,
): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let id: string | null = null;
  let event = 'message';
  let data: string[] = [];

  const onLine = (line: string) => {
    if (line === '') {
      if (data.length) onMessage({ id, event, data: data.join('\n') });
      id = null;
      event = 'message';
      data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'data') data.push(text);
    else if (field === 'id') id = text;
    else if (field === 'event') event = text;
  };

  /** Every complete line of the buffer; a CR that ends it may be half a CRLF, so it waits unless the stream is over. */
  const drain = (final: boolean) => {
    let at: number;
    while ((at = buffer.search(LINE_END)) >= 0) {
      if (!final && buffer[at] === '\r' && at === buffer.length - 1) return;
      const line = buffer.slice(0, at);
      buffer = buffer.slice(at + (buffer.startsWith('\r\n', at) ? 2 : 1));
      onLine(line);
    }
  };

  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    drain(false);
  }
  buffer += decoder.decode();
  drain(true);
}
