import { createServer } from 'node:net';

/** True when nothing listens on `host:port` right now (checked by binding it for a moment). */
export function isPortFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    // `exclusive` so a cluster primary in this process cannot hand us a shared handle.
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

export interface PortRange {
  host: string;
  portMin: number;
  portMax: number;
}

/**
 * Picks a free port of the range: `preferred` first when given, then every port from a random
 * starting point (so concurrent pickers rarely collide), skipping `taken` (ports recorded as in
 * use, whether or not they are bound at this instant). Null when the range is exhausted.
 */
export async function pickFreePort(
  range: PortRange,
  taken: ReadonlySet<number>,
  preferred?: number | null,
): Promise<number | null> {
  if (preferred && !taken.has(preferred) && (await isPortFree(range.host, preferred))) return preferred;
  const size = range.portMax - range.portMin + 1;
  const start = Math.floor(Math.random() * size);
  for (let i = 0; i < size; i++) {
    const port = range.portMin + ((start + i) % size);
    if (port === preferred || taken.has(port)) continue;
    if (await isPortFree(range.host, port)) return port;
  }
  return null;
}
