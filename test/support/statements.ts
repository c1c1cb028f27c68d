import pg from 'pg';

/**
 * Records the SQL text of every statement this process sends to Postgres (through `pg.Client`),
 * for tests that count an api route's round trips: the api runs in the test's process. `stop`
 * puts the driver back.
 */
export function recordStatements(): { sent: string[]; stop: () => void } {
  const sent: string[] = [];
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const config = args[0] as string | { text?: string };
    sent.push(typeof config === 'string' ? config : (config?.text ?? ''));
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  return { sent, stop: () => void (pg.Client.prototype.query = original) };
}
