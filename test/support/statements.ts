import pg from 'pg';

/** One statement as sent, with the connection that sent it. */
export interface SentStatement {
  text: string;
  client: pg.Client;
}

/**
 * Records the SQL text of every statement this process sends to Postgres (through `pg.Client`),
 * for tests that count an api route's round trips: the api runs in the test's process. `sent`
 * holds the texts (a test may empty it); `log` the same statements with their connections, never
 * emptied, so statements of transactions running at once can be told apart (`transactionsIn`).
 * `stop` puts the driver back.
 */
export function recordStatements(): { sent: string[]; log: SentStatement[]; stop: () => void } {
  const sent: string[] = [];
  const log: SentStatement[] = [];
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const config = args[0] as string | { text?: string };
    const text = typeof config === 'string' ? config : (config?.text ?? '');
    sent.push(text);
    log.push({ text, client: this });
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  return { sent, log, stop: () => void (pg.Client.prototype.query = original) };
}

/**
 * The transactions in `statements` (a slice of a recording's `log`), each from its BEGIN to its
 * COMMIT or ROLLBACK on one connection, whatever ran on other connections in between. A
 * transaction still open at the end of the slice is left out.
 */
export function transactionsIn(statements: readonly SentStatement[]): string[][] {
  const open = new Map<pg.Client, string[]>();
  const done: string[][] = [];
  for (const { text, client } of statements) {
    if (/^\s*(START TRANSACTION|BEGIN)/i.test(text)) open.set(client, [text]);
    else {
      const current = open.get(client);
      if (!current) continue;
      current.push(text);
      if (/^\s*(COMMIT|ROLLBACK)/i.test(text)) {
        done.push(current);
        open.delete(client);
      }
    }
  }
  return done;
}
