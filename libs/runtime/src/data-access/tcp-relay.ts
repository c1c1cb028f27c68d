import type { Socket } from 'node:net';
import { LoopbackFront } from './loopback-front.js';

/**
 * A plain TCP relay to a store that demands passwords itself: it lets a sandbox, which cannot
 * reach the store's address, connect to it at the sandbox network's services address. It reads
 * nothing; the store authenticates the deployment's own role or user as it would directly.
 */
export class TcpRelay extends LoopbackFront {
  constructor(
    private readonly options: {
      host: string;
      port: number;
      upstream: { host: string; port: number };
      onError?: (err: Error) => void;
    },
  ) {
    super(options, options.upstream);
  }

  protected async handle(client: Socket): Promise<void> {
    try {
      const upstream = await this.openUpstream(client);
      client.pipe(upstream);
      upstream.pipe(client);
    } catch (err) {
      this.options.onError?.(err as Error);
      client.destroy();
    }
  }
}
