/** Postgres error helpers, so services can react to constraint names instead of parsing text. */

interface PgLikeError {
  code?: string;
  constraint?: string;
  driverError?: { code?: string; constraint?: string };
}

function pgFields(err: unknown): { code?: string; constraint?: string } {
  const e = err as PgLikeError;
  return { code: e?.driverError?.code ?? e?.code, constraint: e?.driverError?.constraint ?? e?.constraint };
}

/** True when `err` is a unique violation (of `constraint`, when given). */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const { code, constraint: actual } = pgFields(err);
  return code === '23505' && (constraint === undefined || actual === constraint);
}

/** True when `err` is a foreign-key violation (of `constraint`, when given). */
export function isForeignKeyViolation(err: unknown, constraint?: string): boolean {
  const { code, constraint: actual } = pgFields(err);
  return code === '23503' && (constraint === undefined || actual === constraint);
}

/** The SQLSTATE of a Postgres error (plain driver error or TypeORM's wrapper), if it has one. */
export function sqlStateOf(err: unknown): string | undefined {
  const { code } = pgFields(err);
  return code && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * True when Postgres refused a value itself (SQLSTATE class 22, "data exception": a NUL or a
 * bad byte sequence, text that is not valid for its type, a number out of range, ...). Such an
 * error is permanent for that value: retrying the same statement can never succeed.
 */
export function isDataException(err: unknown): boolean {
  return sqlStateOf(err)?.startsWith('22') ?? false;
}

/**
 * True when Postgres refused the row itself: a data exception (class 22) or an integrity
 * violation (class 23, e.g. a foreign key to a row deleted meanwhile). Retrying the same row
 * can never succeed, unlike a connection or timeout error.
 */
export function isRowRefused(err: unknown): boolean {
  const code = sqlStateOf(err);
  return code !== undefined && (code.startsWith('22') || code.startsWith('23'));
}

const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  // Postgres refusing new connections: too many clients, or starting up / shutting down.
  '53300',
  '57P03',
]);

/**
 * True when `err` means "Postgres is unreachable or going away" rather than "this query is
 * wrong": connection refused, connection class 08, admin shutdown (57P01..57P03), pool timeouts.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const { code } = pgFields(err);
  if (code && (CONNECTION_ERROR_CODES.has(code) || code.startsWith('08') || /^57P0[1-3]$/.test(code))) return true;
  const message = (err as Error)?.message ?? '';
  return /Connection terminated|timeout exceeded when trying to connect|Connection refused|connect ECONNREFUSED|Driver not Connected/i.test(
    message,
  );
}
