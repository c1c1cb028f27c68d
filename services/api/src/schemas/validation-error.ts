import type Joi from 'joi';
import type { InputProblem } from '@slipway/domain';

/** Where a validated value came from; the first element of every `loc` (docs/api.md, Errors). */
export type Source = 'path' | 'query' | 'body' | 'header';

/** One FastAPI-style validation problem: the shape the domain's input validators return. */
export type ValidationIssue = InputProblem;

type Context = Joi.Context & { limit?: unknown; regex?: unknown; valids?: unknown[]; name?: string };

const quote = (v: unknown): string => (typeof v === 'string' ? `'${v}'` : String(v));

function listValids(valids: unknown[] = []): string {
  const shown = valids.filter((v) => v !== null).map(quote);
  if (shown.length <= 1) return shown.join('');
  return `${shown.slice(0, -1).join(', ')} or ${shown.at(-1)}`;
}

/**
 * joi error codes → pydantic v2 error types and messages, so clients written against FastAPI
 * control planes can read our 422s. Codes not listed fall back to `value_error` with joi's text.
 */
const ISSUE_BY_CODE: Record<string, (ctx: Context, isInteger: boolean) => { type: string; msg: string }> = {
  'any.required': () => ({ type: 'missing', msg: 'Field required' }),
  'string.base': () => ({ type: 'string_type', msg: 'Input should be a valid string' }),
  'string.empty': () => ({ type: 'string_too_short', msg: 'String should have at least 1 character' }),
  'string.min': (c) => ({ type: 'string_too_short', msg: `String should have at least ${c.limit} characters` }),
  'string.max': (c) => ({ type: 'string_too_long', msg: `String should have at most ${c.limit} characters` }),
  'string.length': (c) => ({ type: 'string_length', msg: `String should have exactly ${c.limit} characters` }),
  'string.pattern.base': (c) => ({
    type: 'string_pattern_mismatch',
    msg: `String should match pattern '${(c.regex as RegExp | string)?.toString().replace(/^\/|\/[a-z]*$/g, '')}'`,
  }),
  'string.guid': () => ({ type: 'uuid_parsing', msg: 'Input should be a valid UUID' }),
  'string.uri': () => ({ type: 'url_parsing', msg: 'Input should be a valid URL' }),
  'string.uriCustomScheme': () => ({ type: 'url_scheme', msg: 'URL scheme should be one of the allowed schemes' }),
  'string.isoDate': () => ({ type: 'datetime_parsing', msg: 'Input should be a valid datetime' }),
  'number.base': (_c, isInteger) =>
    isInteger
      ? { type: 'int_parsing', msg: 'Input should be a valid integer, unable to parse string as an integer' }
      : { type: 'float_parsing', msg: 'Input should be a valid number, unable to parse string as a number' },
  'number.integer': () => ({
    type: 'int_from_float',
    msg: 'Input should be a valid integer, got a number with a fractional part',
  }),
  'number.unsafe': () => ({ type: 'int_parsing', msg: 'Input should be a valid integer' }),
  'number.infinity': () => ({ type: 'finite_number', msg: 'Input should be a finite number' }),
  'number.min': (c) => ({ type: 'greater_than_equal', msg: `Input should be greater than or equal to ${c.limit}` }),
  'number.max': (c) => ({ type: 'less_than_equal', msg: `Input should be less than or equal to ${c.limit}` }),
  'number.greater': (c) => ({ type: 'greater_than', msg: `Input should be greater than ${c.limit}` }),
  'number.less': (c) => ({ type: 'less_than', msg: `Input should be less than ${c.limit}` }),
  'number.positive': () => ({ type: 'greater_than', msg: 'Input should be greater than 0' }),
  'boolean.base': () => ({ type: 'bool_parsing', msg: 'Input should be a valid boolean, unable to interpret input' }),
  'object.base': () => ({ type: 'dict_type', msg: 'Input should be a valid dictionary or object' }),
  'array.base': () => ({ type: 'list_type', msg: 'Input should be a valid list' }),
  'array.min': (c) => ({ type: 'too_short', msg: `List should have at least ${c.limit} items` }),
  'array.max': (c) => ({ type: 'too_long', msg: `List should have at most ${c.limit} items` }),
  'array.unique': () => ({ type: 'value_error', msg: 'Value error, list items must be unique' }),
  'any.only': (c) => ({ type: 'enum', msg: `Input should be ${listValids(c.valids)}` }),
  'date.base': () => ({ type: 'datetime_parsing', msg: 'Input should be a valid datetime' }),
  // Only schemas that refuse unknown keys explicitly (list filters: never silently ignored).
  'object.unknown': (c) => ({
    type: 'extra_forbidden',
    msg: `Extra inputs are not permitted: '${c.key}' is not a filter this server implements`,
  }),
};

interface Described {
  type?: string;
  keys?: Record<string, Described>;
  items?: Described[];
  rules?: Array<{ name: string }>;
}

/**
 * Whether the schema at `path` is an integer. Walks `describe()` rather than `extract()`, which
 * only follows object keys and so would miss array items (`[80, 'http']` → index 1).
 */
function isIntegerAt(schema: Joi.Schema | undefined, path: Array<string | number>): boolean {
  if (!schema) return false;
  let node: Described | undefined = schema.describe() as Described;
  for (const segment of path) {
    if (node?.type === 'array' && typeof segment === 'number')
      node = node.items?.length === 1 ? node.items[0] : undefined;
    else if (node?.type === 'object') node = node.keys?.[String(segment)];
    else node = undefined;
    if (!node) return false;
  }
  return node?.rules?.some((r) => r.name === 'integer') ?? false;
}

/** Maps a joi error from validating `source` with `schema` to FastAPI issues, one per detail. */
export function issuesFromJoi(error: Joi.ValidationError, source: Source, schema?: Joi.Schema): ValidationIssue[] {
  return error.details.map((detail) => {
    const known = ISSUE_BY_CODE[detail.type];
    const mapped = known
      ? known(detail.context as Context, detail.type === 'number.base' && isIntegerAt(schema, detail.path))
      : { type: 'value_error', msg: `Value error, ${detail.message}` };
    return { loc: [source, ...detail.path], msg: mapped.msg, type: mapped.type };
  });
}
