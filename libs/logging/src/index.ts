/**
 * pino set up once for every process: JSON lines, ISO timestamps, and redaction of every
 * place a credential or secret can sit in what we log (headers, bodies, error parameters).
 */
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';
export { collectProcessMetrics } from './process-metrics.js';

/**
 * Paths pino censors. Covers request headers, should an object carrying them be logged, and the field names
 * this product uses for secrets wherever an object carrying them might be logged.
 */
export const REDACT_PATHS: readonly string[] = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers["x-api-key"]',
  'headers.authorization',
  '*.client_secret',
  '*.clientSecret',
  '*.api_key',
  '*.apiKey',
  '*.key',
  '*.token',
  '*.password',
  '*.private_key',
  '*.secrets[*].value',
  // TypeORM/pg errors carry the bound parameters of the failed query: never log them.
  '*.parameters',
  'err.parameters',
  'parameters',
];

export interface CreateLoggerOptions {
  level?: string;
  /** Service name stamped on every line (`api`, `builder`, ...). */
  name: string;
  /** Where lines go; stdout by default. Tests pass a capturing stream. */
  destination?: DestinationStream;
  /**
   * The platform's own credentials (`platformCredentials` of @slipway/config: the passwords in
   * DATABASE_URL and REDIS_URL, the secrets key, the bootstrap key): masked wherever they
   * appear in a line, in any field, whatever logged them (an error message quoting a URL).
   */
  secrets?: Iterable<string>;
}

export function createLogger({ level = 'info', name, destination, secrets = [] }: CreateLoggerOptions): Logger {
  const mask = lineMasker(secrets);
  const options: LoggerOptions = {
    name,
    level,
    base: { service: name },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: [...REDACT_PATHS], censor: '[REDACTED]' },
    serializers: { err: pino.stdSerializers.err },
    formatters: { level: (label) => ({ level: label }) },
    ...(mask ? { hooks: { streamWrite: mask } } : {}),
  };
  return pino(options, destination ?? stdoutDestination());
}

let stdout: ReturnType<typeof pino.destination> | undefined;

/**
 * Standard output, written asynchronously: a log line never blocks a request on a slow reader
 * of the pipe (a log shipper, a busy terminal). Lines are written as soon as the previous write
 * finished (no size threshold, so nothing waits in a buffer), and whatever is still buffered
 * when the process exits is flushed synchronously then. One destination per process.
 */
function stdoutDestination(): ReturnType<typeof pino.destination> {
  if (stdout) return stdout;
  const dest = pino.destination({ dest: 1, sync: false });
  process.once('exit', () => {
    try {
      dest.flushSync();
    } catch {
      // A write still in flight at exit (EAGAIN): nothing more can be done synchronously.
    }
  });
  stdout = dest;
  return dest;
}

/**
 * Replaces every occurrence of a known secret value in free text (build output, error
 * messages) with `********`. Values shorter than 4 characters are left alone: masking them would
 * shred ordinary text without protecting anything.
 */
export function redactValues(text: string, secretValues: Iterable<string>): string {
  let out = text;
  const values = [...secretValues].filter((v) => v.length >= 4).sort((a, b) => b.length - a.length);
  for (const value of values) out = out.split(value).join('********');
  return out;
}
/**
 * Masks each value in a serialized (JSON) line as it stands there: raw and JSON-escaped (a
 * password with a quote or backslash is written escaped). An object key that is exactly a
 * secret keeps its name (a weak password such as `postgres` would otherwise rename the
 * `postgres` field of every line); anywhere in a value it is masked. Null when there is
 * nothing to mask.
 */
function lineMasker(secrets: Iterable<string>): ((line: string) => string) | null {
  const forms = new Set<string>();
  for (const value of secrets) {
    if (value.length < 4) continue;
    forms.add(value);
    forms.add(JSON.stringify(value).slice(1, -1));
  }
  if (forms.size === 0) return null;
  const longestFirst = [...forms].sort((a, b) => b.length - a.length);
  const pattern = new RegExp(longestFirst.map((f) => f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
  return (line) =>
    line.replace(pattern, (match: string, offset: number) => (line[offset - 1] === '"' && line.startsWith('":', offset + match.length) ? match : '********'));
}
export { installShutdown, type ShutdownStep } from './shutdown.js';
