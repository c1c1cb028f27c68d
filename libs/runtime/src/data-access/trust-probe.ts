import { connect } from 'node:net';
import { readMessage, startupMessage } from './postgres-front.js';
import { SocketReader } from './socket-reader.js';

/** What a local process could do without any password (null: could not tell, e.g. unreachable). */
export interface LocalTrustReport {
  /** Postgres let the control plane's user in without asking for a password (`trust`). */
  postgresPasswordless: boolean | null;
  /** Redis answered a command on a connection that never authenticated (`default` user open). */
  redisDefaultOpen: boolean | null;
}

const PROBE_TIMEOUT_MS = 3_000;

function hostPort(url: string, defaultPort: number): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1', port: Number(u.port) || defaultPort };
}

/** Opens a raw connection, runs `exchange`, always closes; null on any failure or timeout. */
async function probe(
  target: { host: string; port: number },
  exchange: (reader: SocketReader, write: (b: Buffer | string) => void) => Promise<boolean>,
): Promise<boolean | null> {
  const socket = connect(target);
  socket.setTimeout(PROBE_TIMEOUT_MS, () => socket.destroy(new Error('probe timed out')));
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return await exchange(new SocketReader(socket), (b) => socket.write(b));
  } catch {
    return null;
  } finally {
    socket.destroy();
  }
}

/**
 * Asks Postgres and Redis, as any local process could, whether they let a client in without a
 * password. Postgres: a StartupMessage for the control plane's user and database with no
 * password at hand; an immediate AuthenticationOk means `trust`. Redis: PING without AUTH.
 */
export async function probeLocalTrust(databaseUrl: string, redisUrl: string): Promise<LocalTrustReport> {
  const db = new URL(databaseUrl);
  const [postgresPasswordless, redisDefaultOpen] = await Promise.all([
    probe(hostPort(databaseUrl, 5432), async (reader, write) => {
      write(
        startupMessage({
          user: decodeURIComponent(db.username) || 'postgres',
          database: decodeURIComponent(db.pathname.slice(1)) || 'postgres',
        }),
      );
      const { type, body } = await readMessage(reader);
      if (type === 'R') return body.readInt32BE(0) === 0;
      return false;
    }),
    probe(hostPort(redisUrl, 6379), async (reader, write) => {
      write('*1\r\n$4\r\nPING\r\n');
      return (await reader.line()) === '+PONG';
    }),
  ]);
  return { postgresPasswordless, redisDefaultOpen };
}

/**
 * Which data-access fronts the deployer runs: one per store that lets local clients in without
 * a password, or that could not be probed (assume the worst).
 */
export function activeFronts(report: LocalTrustReport): { postgres: boolean; redis: boolean } {
  return { postgres: report.postgresPasswordless !== false, redis: report.redisDefaultOpen !== false };
}
