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

/** Secrets shorter than this are never masked (it would shred ordinary text without protecting anything). */
const MIN_MASKED = 4;
/**
 * Secrets shorter than this are masked only as a whole word: a weak password such as `Pass`
 * would otherwise rewrite every `Password` and `Passwordless` of a log.
 */
const MIN_MASKED_INSIDE_WORDS = 8;
const WORD_CHAR = /[\p{L}\p{N}_]/u;
const escapeRegExp = (value: string) => value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** One pattern finding every maskable value, longest first (a secret containing another leaks no tail). */
function secretPattern(values: Iterable<string>): RegExp | null {
  const usable = [...new Set(values)].filter((v) => v.length >= MIN_MASKED).sort((a, b) => b.length - a.length);
  if (!usable.length) return null;
  const alternatives = usable.map((value) => {
    if (value.length >= MIN_MASKED_INSIDE_WORDS) return escapeRegExp(value);
    const before = WORD_CHAR.test(value[0]!) ? '(?<![\\p{L}\\p{N}_])' : '';
    const after = WORD_CHAR.test(value.at(-1)!) ? '(?![\\p{L}\\p{N}_])' : '';
    return `${before}${escapeRegExp(value)}${after}`;
  });
  return new RegExp(alternatives.join('|'), 'gu');
}

/**
 * Replaces each occurrence of a known secret value in free text (build output, error messages)
 * with `********`. Values shorter than 4 characters are left alone, and values shorter than 8
 * are masked only where they stand as a word of their own (`abc1` in `x=abc1;`, not in `abc12`).
 */
export function redactValues(text: string, secretValues: Iterable<string>): string {
  const pattern = secretPattern(secretValues);
  return pattern ? text.replace(pattern, '********') : text;
}

/** A JSON string literal, and whether a `:` follows it (an object key). */
const JSON_STRING = /"(?:[^"\\]|\\.)*"(\s*:)?/g;

/**
 * Masks each value in a serialized (JSON) line: only string values are read, decoded (so a
 * password with a quote or backslash is found as written) and masked as redactValues masks free
 * text; object keys are never rewritten (a weak password such as `postgres` or `Pass` would
 * otherwise rename the `postgres` or `Password…` fields of every line), nor are numbers or
 * literals. Null when there is nothing to mask.
 */
function lineMasker(secrets: Iterable<string>): ((line: string) => string) | null {
  const values = [...secrets].filter((v) => v.length >= MIN_MASKED);
  const pattern = secretPattern(values);
  if (!pattern) return null;
  // A cheap first look (raw and JSON-escaped forms, anywhere) spares most lines the walk.
  const anywhere = new RegExp(
    [...new Set(values.flatMap((v) => [v, JSON.stringify(v).slice(1, -1)]))].map(escapeRegExp).join('|'),
  );
  return (line) => {
    if (!anywhere.test(line)) return line;
    return line.replace(JSON_STRING, (literal: string, key: string | undefined) => {
      if (key) return literal;
      const text = JSON.parse(literal) as string;
      const masked = text.replace(pattern, '********');
      return masked === text ? literal : JSON.stringify(masked);
    });
  };
}
export { installProcessGuards } from './process-guards.js';
export { installShutdown, type ShutdownStep } from './shutdown.js';
export { PeriodicPass, type PeriodicPassOptions } from './periodic-pass.js';
export { startHealthPort, type HealthPortOptions } from './health-port.js';
export { capLogLine, LineSplitter, MAX_LOG_LINE_BYTES, type LineSplitterOptions } from './line-splitter.js';
