import Joi from 'joi';
import { hasUnstorableCharacter } from '@slipway/domain';
import { UnprocessableError } from './errors.js';

/** The large fields: stored apart from the run row, each capped. */
export const LARGE_FIELDS = ['inputs', 'outputs', 'events', 'serialized', 'extra'] as const;
export type LargeField = (typeof LARGE_FIELDS)[number];

/**
 * One run's fields as a create or an update carries them (LangSmith's run schema, the fields this
 * store keeps). Every field is optional here: a create must have more (`validateCreate`), an
 * update carries what changed.
 */
export interface RunFields {
  id: string;
  trace_id?: string;
  parent_run_id?: string | null;
  dotted_order?: string;
  name?: string;
  run_type?: string;
  start_time?: string;
  end_time?: string | null;
  error?: string | null;
  tags?: string[] | null;
  session_id?: string | null;
  session_name?: string | null;
  reference_example_id?: string | null;
  inputs?: unknown;
  outputs?: unknown;
  events?: unknown;
  serialized?: unknown;
  extra?: unknown;
}

export interface RunOperation {
  kind: 'create' | 'update';
  fields: RunFields;
}

const uuid = () => Joi.string().guid();
/** A time as LangSmith clients send one: ISO 8601, or epoch milliseconds. */
const time = () => Joi.alternatives(Joi.number().min(0).max(8.64e15), Joi.string().max(64)).custom(toIsoTime, 'time');

function toIsoTime(value: string | number): string {
  const date = new Date(typeof value === 'string' && /^\d{4}-\d\d-\d\dT[\d:.]+$/.test(value) ? `${value}Z` : value);
  if (Number.isNaN(date.getTime())) throw new Error('is not a time');
  return date.toISOString();
}

/**
 * The longest dotted order stored: a run about 40 levels deep (each level is a 60-character
 * segment). A trace's runs are read in tree order through an index on the dotted order, and a
 * btree entry holds at most ~2.7 kB, so a deeper run is refused (422) rather than failing the write.
 */
export const MAX_DOTTED_ORDER_CHARS = 2_560;

const SEGMENT = /^(\d{8}T\d{6}\d{6})Z([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

const runFields = Joi.object({
  id: uuid().required(),
  trace_id: uuid(),
  parent_run_id: uuid().allow(null),
  dotted_order: Joi.string()
    .max(MAX_DOTTED_ORDER_CHARS)
    .messages({
      'string.max': `"dotted_order" is longer than ${MAX_DOTTED_ORDER_CHARS} characters: runs are kept at most about 40 levels deep`,
    }),
  name: Joi.string().max(1024),
  run_type: Joi.string().max(64),
  start_time: time(),
  end_time: time().allow(null),
  error: Joi.string()
    .allow('', null)
    .max(1024 * 1024),
  tags: Joi.array().items(Joi.string().max(1024)).max(1000).allow(null),
  session_id: uuid().allow(null),
  session_name: Joi.string().max(1024).allow(null),
  reference_example_id: uuid().allow(null),
  inputs: Joi.any(),
  outputs: Joi.any(),
  events: Joi.any(),
  serialized: Joi.any(),
  extra: Joi.any(),
}).unknown(true);

const VALIDATE: Joi.ValidationOptions = {
  abortEarly: true,
  convert: true,
  stripUnknown: true,
  errors: { wrap: { label: false } },
};

/** Deeper than this, a value is refused: what jsonb and JSON.stringify can take comfortably. */
const MAX_DEPTH = 64;

/**
 * The reason a JSON value cannot be stored, or null: text Postgres refuses (U+0000, an unpaired
 * surrogate) in any string or key, or nesting deeper than MAX_DEPTH. Iterative, so a hostile
 * depth cannot overflow this walk.
 */
export function unstorable(value: unknown): string | null {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [node, depth] = stack.pop()!;
    if (typeof node === 'string') {
      if (hasUnstorableCharacter(node)) return 'text with U+0000 or an unpaired UTF-16 surrogate';
      continue;
    }
    if (!node || typeof node !== 'object') continue;
    if (depth >= MAX_DEPTH) return `a value nested more than ${MAX_DEPTH} levels deep`;
    for (const [key, child] of Object.entries(node)) {
      if (hasUnstorableCharacter(key)) return 'a key with U+0000 or an unpaired UTF-16 surrogate';
      stack.push([child, depth + 1]);
    }
  }
  return null;
}

/**
 * A validated, normalised operation, or a 422 that names the run and what is wrong with it.
 * Times come out as ISO strings; a create gets the trace id and dotted order a root run implies.
 */
export function validateOperation(kind: RunOperation['kind'], raw: unknown, where: string): RunOperation {
  const bad = unstorable(raw);
  if (bad) throw new UnprocessableError(`${where}: ${bad}.`);
  const { value, error } = runFields.validate(raw, VALIDATE);
  if (error) throw new UnprocessableError(`${where}: ${error.details[0]!.message}.`);
  const fields = value as RunFields;
  if (kind === 'create') {
    for (const required of ['name', 'run_type', 'start_time'] as const) {
      if (fields[required] == null)
        throw new UnprocessableError(`${where}: "${required}" is required to create a run.`);
    }
    if (fields.trace_id == null && fields.dotted_order == null && fields.parent_run_id == null) {
      // A root run sent without tracing context (POST /runs from a plain client): it is its own trace.
      fields.trace_id = fields.id;
      fields.dotted_order = `${segmentTime(fields.start_time!)}Z${fields.id}`;
    }
    if (fields.trace_id == null || fields.dotted_order == null) {
      throw new UnprocessableError(`${where}: "trace_id" and "dotted_order" are required to create a child run.`);
    }
  }
  if (fields.dotted_order != null) checkDottedOrder(fields, where);
  return { kind, fields };
}

/** `2024-01-02T03:04:05.678901Z` → `20240102T030405678901` (the time of a dotted order segment). */
function segmentTime(iso: string): string {
  const d = new Date(iso);
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const date = `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}`;
  return `${date}T${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}${p(d.getUTCMilliseconds(), 3)}000`;
}

/** The dotted order names the run last and its trace first, each segment `<time>Z<uuid>`. */
function checkDottedOrder(fields: RunFields, where: string): void {
  const segments = fields.dotted_order!.split('.');
  const parsed = segments.map((s) => SEGMENT.exec(s));
  if (parsed.some((m) => !m)) throw new UnprocessableError(`${where}: "dotted_order" is not a dotted order.`);
  if (parsed.at(-1)![2]!.toLowerCase() !== fields.id.toLowerCase())
    throw new UnprocessableError(`${where}: "dotted_order" does not end with the run's id.`);
  if (fields.trace_id && parsed[0]![2]!.toLowerCase() !== fields.trace_id.toLowerCase()) {
    throw new UnprocessableError(`${where}: "dotted_order" does not start with the trace id.`);
  }
  if (Number.isNaN(startOfDottedOrder(fields.dotted_order!).getTime()))
    throw new UnprocessableError(`${where}: "dotted_order" has an impossible time.`);
}

/** The run's own start time, as its dotted order's last segment records it (to the microsecond, cut to ms). */
export function startOfDottedOrder(dotted: string): Date {
  const t = SEGMENT.exec(dotted.slice(dotted.lastIndexOf('.') + 1))?.[1];
  if (!t) return new Date(NaN);
  return new Date(
    `${t.slice(0, 4)}-${t.slice(4, 6)}-${t.slice(6, 8)}T${t.slice(9, 11)}:${t.slice(11, 13)}:${t.slice(13, 15)}.${t.slice(15, 18)}Z`,
  );
}

/** The ids of the runs above this one, from its dotted order (root first). */
export function ancestorsOf(dotted: string): string[] {
  return dotted
    .split('.')
    .slice(0, -1)
    .map((s) => SEGMENT.exec(s)?.[2] ?? '')
    .filter(Boolean);
}

const plain = (v: unknown): v is Record<string, unknown> => Boolean(v) && typeof v === 'object' && !Array.isArray(v);

/**
 * `later`'s fields over `earlier`'s: an update overrides what it sets, and leaves the rest.
 * `extra` merges one level down and its `metadata` key by key: the client's updates carry their
 * own `extra` (runtime, a few metadata keys), which must not erase what the create said.
 * Neither argument is changed.
 */
export function mergeFields(earlier: RunFields | null, later: RunFields): RunFields {
  return mergeInto(earlier ? owned(earlier) : {}, later);
}

/**
 * mergeFields' rules applied to `into` itself, which must be a fold's own (made by this function
 * from `{}`, or a copy): each merge costs what `later` holds, not what was merged before it. A
 * request folding many operations of one run (up to its 1,000) stays linear: copying the merged
 * metadata at each step made it quadratic, minutes of one event loop for a 12 MB batch.
 */
export function mergeInto(into: Record<string, unknown>, later: RunFields): RunFields {
  for (const [key, value] of Object.entries(later)) {
    if (value === undefined) continue;
    if (key !== 'extra') put(into, key, value);
    else if (!plain(value) || !plain(into.extra)) put(into, 'extra', plain(value) ? ownedExtra(value) : value);
    else {
      const extra = into.extra;
      const before = extra.metadata;
      const metadata =
        plain(before) && plain(value.metadata) ? putAll(before, value.metadata) : (value.metadata ?? before);
      putAll(extra, value);
      if (metadata !== undefined)
        put(extra, 'metadata', metadata === value.metadata && plain(metadata) ? { ...metadata } : metadata);
    }
  }
  return into as unknown as RunFields;
}

/**
 * `target[key] = value` as a spread copies it: an own data property whatever the key. JSON keeps
 * `__proto__` as an ordinary key, which an assignment (or Object.assign) would take for the
 * object's prototype and drop.
 */
function put(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

function putAll(target: Record<string, unknown>, source: Record<string, unknown>): Record<string, unknown> {
  for (const [key, value] of Object.entries(source)) put(target, key, value);
  return target;
}

/** A copy of a run's fields whose own object, `extra` and `extra.metadata` mergeInto may change. */
function owned(fields: RunFields): Record<string, unknown> {
  const out: Record<string, unknown> = { ...fields };
  if (plain(out.extra)) out.extra = ownedExtra(out.extra);
  return out;
}

function ownedExtra(extra: Record<string, unknown>): Record<string, unknown> {
  const out = { ...extra };
  if (plain(out.metadata)) out.metadata = { ...out.metadata };
  return out;
}
