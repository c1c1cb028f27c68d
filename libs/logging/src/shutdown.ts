import type { Logger } from 'pino';

export type ShutdownStep = { name: string; run: () => Promise<unknown> | unknown };

/**
 * One ordered, idempotent shutdown under a hard deadline: the first signal runs the steps in
 * order; a second signal or the deadline exits at once, so a hung dependency never keeps a
 * process alive past what its supervisor expects.
 */
export function installShutdown(log: Logger, steps: ShutdownStep[], timeoutMs: number): () => Promise<void> {
  let running: Promise<void> | undefined;
  const shutdown = (reason: string): Promise<void> => {
    if (running) return running;
    log.info({ reason }, 'shutting down');
    const deadline = setTimeout(() => {
      log.error({ timeoutMs }, 'shutdown deadline passed; exiting');
      process.exit(1);
    }, timeoutMs);
    deadline.unref();
    running = (async () => {
      for (const step of steps) {
        try {
          await step.run();
        } catch (err) {
          log.warn({ err, step: step.name }, 'shutdown step failed');
        }
      }
      clearTimeout(deadline);
    })();
    return running;
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (running) process.exit(1);
      void shutdown(signal).then(() => process.exit(0));
    });
  }
  return () => shutdown('requested');
}
