import { request } from 'node:http';

/** One GET; resolves with the status code, or null on any connection problem or timeout. */
export function httpStatus(host: string, port: number, path: string, timeoutMs = 2_000): Promise<number | null> {
  return new Promise((resolve) => {
    const req = request({ host, port, path, method: 'GET', timeout: timeoutMs, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? null);
    });
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.once('error', () => resolve(null));
    req.end();
  });
}

/**
 * The health probe of docs/architecture.md, Runtimes: `GET /ok` must answer 200. A server without an /ok
 * route (404) is judged by `GET /` instead, which must answer 2xx.
 */
export async function probeHealth(host: string, port: number): Promise<boolean> {
  const ok = await httpStatus(host, port, '/ok');
  if (ok === 200) return true;
  if (ok !== 404) return false;
  const root = await httpStatus(host, port, '/');
  return root !== null && root >= 200 && root < 300;
}

export interface WaitHealthyOptions {
  host: string;
  port: number;
  /** Absolute epoch ms after which waiting fails. */
  deadline: number;
  /** Cancels the wait (phase guard: interrupted, deadline). */
  signal?: AbortSignal;
  /** Checked between probes: a server that died will never answer. */
  alive: () => boolean;
  intervalMs?: number;
}

export type HealthOutcome = { healthy: true } | { healthy: false; reason: 'exited' | 'deadline' | 'aborted' };

/** Polls the health probe until it passes, the process dies, the deadline passes or `signal` fires. */
export async function waitHealthy({
  host,
  port,
  deadline,
  signal,
  alive,
  intervalMs = 200,
}: WaitHealthyOptions): Promise<HealthOutcome> {
  for (;;) {
    if (signal?.aborted) return { healthy: false, reason: 'aborted' };
    if (!alive()) return { healthy: false, reason: 'exited' };
    if (await probeHealth(host, port)) return { healthy: true };
    if (Date.now() >= deadline) return { healthy: false, reason: 'deadline' };
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, intervalMs);
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      }
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}
