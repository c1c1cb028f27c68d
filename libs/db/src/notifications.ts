import { EventEmitter } from 'node:events';
import pg from 'pg';

export interface NotificationsLog {
  warn(obj: object, msg: string): void;
}

const RECONNECT_MS = 1_000;
const CONNECTION = Symbol('connection');

/**
 * One Postgres connection per process doing LISTEN on a few channels, fanned out in memory to
 * any number of subscribers (log and event followers), so following costs no query per
 * subscriber per tick: a subscriber reads when told something new was stored. The connection
 * opens on the first subscription and reconnects after a loss; while it is down, `connected`
 * is false and subscribers fall back to polling (a notification sent meanwhile is lost).
 */
export class PgNotifications {
  private readonly emitter = new EventEmitter().setMaxListeners(0);
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;
  connected = false;

  constructor(
    private readonly url: string,
    private readonly channels: readonly string[],
    private readonly log: NotificationsLog,
  ) {}

  /** Calls `listener` with the payload of every notification on `channel`; returns the unsubscribe. */
  subscribe(channel: string, listener: (payload: string) => void): () => void {
    if (!this.channels.includes(channel)) throw new Error(`PgNotifications does not listen on ${channel}`);
    this.emitter.on(channel, listener);
    void this.ensureConnected();
    return () => this.emitter.off(channel, listener);
  }

  /**
   * Calls `listener` whenever the connection comes up or goes down (notifications sent while it
   * was down are lost: a subscriber that must not miss work reads again then); returns the
   * unsubscribe.
   */
  onConnectionChange(listener: (connected: boolean) => void): () => void {
    this.emitter.on(CONNECTION, listener);
    return () => this.emitter.off(CONNECTION, listener);
  }

  /**
   * Resolves when one of the channels carries a payload equal to its value (or accepted by its
   * predicate), after `ms`, or on abort: whichever comes first. The caller reads again in every case.
   */
  wait(
    wanted: Record<string, string | ((payload: string) => boolean)>,
    ms: number,
    signal: AbortSignal,
  ): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        for (const unsubscribe of unsubscribers) unsubscribe();
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      const unsubscribers = Object.entries(wanted).map(([channel, value]) =>
        this.subscribe(
          channel,
          (payload) => (typeof value === 'function' ? value(payload) : payload === value) && done(),
        ),
      );
      signal.addEventListener('abort', done);
      if (signal.aborted) done();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    this.emitter.removeAllListeners();
    const client = this.client;
    this.client = null;
    this.connected = false;
    await client?.end().catch(() => undefined);
  }

  private ensureConnected(): Promise<void> {
    if (this.closed || this.client || this.connecting) return this.connecting ?? Promise.resolve();
    this.connecting = this.connect().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, application_name: 'slipway-notifications' });
    const lost = (err?: Error) => {
      if (this.client !== client) return;
      this.client = null;
      this.connected = false;
      this.emitter.emit(CONNECTION, false);
      if (err) this.log.warn({ err }, 'notification connection lost; reconnecting');
      void client.end().catch(() => undefined);
      if (!this.closed) this.retry = setTimeout(() => void this.ensureConnected(), RECONNECT_MS);
    };
    client.on('notification', (n) => this.emitter.emit(n.channel, n.payload ?? ''));
    client.on('error', lost);
    client.on('end', () => lost());
    try {
      await client.connect();
      for (const channel of this.channels) await client.query(`LISTEN "${channel}"`);
    } catch (err) {
      this.log.warn({ err }, 'notification connection failed; retrying');
      void client.end().catch(() => undefined);
      if (!this.closed) this.retry = setTimeout(() => void this.ensureConnected(), RECONNECT_MS);
      return;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.connected = true;
    this.emitter.emit(CONNECTION, true);
  }
}
