import type { Request, Response } from 'express';
import type { Logger } from '@slipway/logging';
import type { EventSink, EventStream } from '../services/event-sink.js';

/** A comment line this often keeps proxies and browsers from timing the stream out (docs/api.md, Events). */
export const HEARTBEAT_MS = 15_000;

/**
 * Serves `stream` as `text/event-stream`: headers that stop proxies from buffering, a heartbeat
 * comment, and an end when the handler returns or the client leaves. An error after the
 * headers went out can no longer change the status: it ends the stream with an `error` event.
 */
export async function serveEventStream(
  req: Request,
  res: Response,
  stream: EventStream,
  log: Logger,
  shutdown?: AbortSignal,
): Promise<void> {
  const aborter = new AbortController();
  const abort = () => aborter.abort();
  res.on('close', abort);
  shutdown?.addEventListener('abort', abort);
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  req.socket.setNoDelay(true);
  res.write(': stream open\n\n');
  const heartbeat = setInterval(() => res.write(': heartbeat\n\n'), HEARTBEAT_MS);
  const sink: EventSink = {
    signal: aborter.signal,
    send: ({ id, event, data }) => {
      if (aborter.signal.aborted) return;
      res.write(
        `${id !== undefined ? `id: ${id}\n` : ''}${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`,
      );
    },
  };
  try {
    await stream(sink);
  } catch (err) {
    log.error({ err }, 'event stream failed');
    sink.send({ event: 'error', data: { detail: 'Internal server error.' } });
  } finally {
    clearInterval(heartbeat);
    shutdown?.removeEventListener('abort', abort);
    res.end();
  }
}
