import type { Logger } from 'pino';

/**
 * How a process that serves many tenants meets an error nobody caught. A rejected promise nobody
 * awaited is logged and the process keeps serving: one request's forgotten promise must not stop
 * every other tenant's traffic (Node's default is to exit). An uncaught exception still ends the
 * process after it is logged, as Node advises: its state can no longer be trusted, and the
 * supervisor (or the reconciler's re-adoption) brings it back.
 */
export function installProcessGuards(log: Logger): void {
  process.on('unhandledRejection', (reason) => {
    log.error({ err: reason }, 'unhandled promise rejection (kept serving); this is a bug');
  });
  process.on('uncaughtException', (err, origin) => {
    log.fatal({ err, origin }, 'uncaught exception; exiting');
    log.flush?.();
    process.exit(1);
  });
}
