/** One Server-Sent Event as received. */
export interface SseEvent {
  id?: string;
  event: string;
  data: any;
}

/**
 * A Server-Sent Events client over fetch streaming, as a browser's fetch would read it (the
 * credentials go in headers, which EventSource cannot send). Comments are counted, not returned.
 */
export class SseClient {
  readonly events: SseEvent[] = [];
  comments = 0;
  ended = false;
  status = 0;
  headers: Headers | undefined;
  private readonly aborter = new AbortController();
  private waiters: Array<() => void> = [];
  readonly done: Promise<void>;

  constructor(url: string, headers: Record<string, string>) {
    this.done = this.run(url, headers);
  }

  /** Resolves once `predicate` holds for the events received so far (or throws after `ms`). */
  async until(predicate: (events: SseEvent[]) => boolean, ms = 15_000): Promise<SseEvent[]> {
    const deadline = Date.now() + ms;
    while (!predicate(this.events)) {
      if (this.ended) throw new Error(`stream ended before the condition held (${this.events.length} events)`);
      if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms (${this.events.length} events)`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 200);
      });
    }
    return this.events;
  }

  close(): void {
    this.aborter.abort();
  }

  private async run(url: string, headers: Record<string, string>): Promise<void> {
    try {
      const res = await fetch(url, {
        headers: { accept: 'text/event-stream', ...headers },
        signal: this.aborter.signal,
      });
      this.status = res.status;
      this.headers = res.headers;
      if (!res.body) return;
      const decoder = new TextDecoder();
      let buffer = '';
      for await (const chunk of res.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          this.parse(buffer.slice(0, cut));
          buffer = buffer.slice(cut + 2);
        }
      }
    } catch (err) {
      if (!this.aborter.signal.aborted) throw err;
    } finally {
      this.ended = true;
      this.wake();
    }
  }

  private parse(block: string): void {
    const event: SseEvent = { event: 'message', data: undefined };
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) {
        this.comments += 1;
        continue;
      }
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id') event.id = value;
      else if (field === 'event') event.event = value;
      else if (field === 'data') data.push(value);
    }
    if (!data.length) return;
    event.data = JSON.parse(data.join('\n'));
    this.events.push(event);
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
