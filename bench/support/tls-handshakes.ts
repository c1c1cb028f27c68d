import { cpus } from 'node:os';
import { connect } from 'node:tls';
import { Worker } from 'node:worker_threads';

/** A TLS endpoint: an address to connect to and the server name (SNI) sent. */
export interface TlsEndpoint {
  host: string;
  port: number;
  servername: string;
}

/**
 * One load thread: `connections` loops, each making a new TCP connection and a full TLS
 * handshake (no session given to resume), counting it when the handshake completed, closing it
 * (close_notify and FIN) and starting the next at once, for `seconds`. Plain JavaScript, run as a
 * worker thread's eval'd source.
 */
const WORKER =
  `
const { connect } = require('node:tls');
const { parentPort, workerData } = require('node:worker_threads');
const { host, port, servername, connections, seconds } = workerData;
let done = 0;
const failures = [];
let failed = 0;
const started = performance.now();
const end = Date.now() + seconds * 1000;
function loop() {
  return new Promise((resolve) => {
    const next = () => {
      if (Date.now() >= end) return resolve();
      const socket = connect({ host, port, servername, rejectUnauthorized: false });
      socket.once('secureConnect', () => {
        done++;
        socket.end();
        next();
      });
      socket.on('error', (err) => {
        failed++;
        if (failures.length < 5) failures.push(err.message);
        socket.destroy();
        next();
      });
    };
    next();
  });
}
Promise.all(Array.from({ length: connections }, loop)).then(() => parentPort.postMessage({ done, failed, ` +
  `failures, elapsed: (performance.now() - started) / 1000 }));
`;

export interface HandshakeResult {
  perSec: number;
  failed: number;
  failures: string[];
}

/**
 * Full TLS handshakes a second an endpoint completes for `connections` clients in parallel, each
 * making one handshake after another on a new connection (no session resumption), over
 * `seconds`. The clients run in as many worker threads as the machine has cores (at most 2), so
 * the Node client's own handshake work is not the one bound of the count. A socket error is
 * counted apart (a correct run has none).
 */
export async function handshakesPerSecond(
  endpoint: TlsEndpoint,
  connections: number,
  seconds: number,
): Promise<HandshakeResult> {
  const threads = Math.max(1, Math.min(2, cpus().length));
  const results = await Promise.all(
    Array.from(
      { length: threads },
      (_, i) =>
        new Promise<{ done: number; failed: number; failures: string[]; elapsed: number }>((resolve, reject) => {
          const share = Math.floor(connections / threads) + (i < connections % threads ? 1 : 0);
          const worker = new Worker(WORKER, { eval: true, workerData: { ...endpoint, connections: share, seconds } });
          worker.once('message', resolve);
          worker.once('error', reject);
        }),
    ),
  );
  // Each thread's count over its own time (from its first connection to its last handshake's end).
  return {
    perSec: results.reduce((n, r) => n + r.done / r.elapsed, 0),
    failed: results.reduce((n, r) => n + r.failed, 0),
    failures: results.flatMap((r) => r.failures).slice(0, 5),
  };
}

/**
 * Connects once checking the certificate against `ca` for the server name (what the load
 * generators, which do not check it, leave out) and returns the TLS version agreed.
 */
export function checkedHandshake(endpoint: TlsEndpoint, ca: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: endpoint.host,
      port: endpoint.port,
      servername: endpoint.servername,
      ca,
      rejectUnauthorized: true,
    });
    socket.once('secureConnect', () => {
      const protocol = socket.getProtocol() ?? 'unknown';
      socket.end();
      resolve(protocol);
    });
    socket.once('error', (err) =>
      reject(new Error(`TLS to ${endpoint.servername} at ${endpoint.host}:${endpoint.port}: ${err.message}`)),
    );
  });
}
