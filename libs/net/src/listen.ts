import type { Server } from 'node:net';

/**
 * Starts `server` on `host:port` (0: any free port), exclusively (never shared with a cluster
 * sibling), resolving once it listens and rejecting with the bind error (EADDRINUSE, …): every
 * front and proxy a deployer opens on a recorded port.
 */
export function listenExclusive(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port, exclusive: true }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
