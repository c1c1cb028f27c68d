import { UnprocessableError } from './errors.js';

/**
 * The subset of LangSmith's run filter language this store answers:
 * `and(…)`, `or(…)`, `not(…)`, `eq`/`neq`/`gt`/`gte`/`lt`/`lte(field, value)`, `has(tags, "x")`,
 * and metadata as `and(eq(metadata_key, "k"), eq(metadata_value, "v"))`. Compiled to a SQL
 * condition over `tracing_runs r` with numbered parameters; anything else is a 422 that says what.
 */
type Node = { fn: string; args: Array<Node | Literal> };
type Literal = { value: string | number | null; ident?: string };

const MAX_FILTER = 4096;
const MAX_NODES = 200;

/** Text columns a comparison may name. */
const TEXT_FIELDS: Record<string, string> = {
  id: 'r.id::text',
  trace_id: 'r.trace_id::text',
  parent_run_id: 'r.parent_run_id::text',
  name: 'r.name',
  run_type: 'r.run_type',
  status: 'r.status',
  error: 'r.error',
  model: 'r.model',
  thread_id: 'r.thread_id',
  revision_id: 'r.revision_id',
  run_id: 'r.run_id',
  assistant_id: 'r.assistant_id',
  checkpoint_id: 'r.checkpoint_id',
  reference_example_id: 'r.reference_example_id::text',
};
const NUMBER_FIELDS: Record<string, string> = {
  prompt_tokens: 'r.prompt_tokens',
  completion_tokens: 'r.completion_tokens',
  total_tokens: 'r.total_tokens',
  latency: 'EXTRACT(EPOCH FROM (r.end_time - r.start_time))',
};
const TIME_FIELDS: Record<string, string> = { start_time: 'r.start_time', end_time: 'r.end_time' };
const OPERATORS: Record<string, string> = { eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' };

class Parser {
  private i = 0;
  private nodes = 0;
  constructor(private readonly s: string) {}

  parse(): Node {
    const node = this.call();
    this.ws();
    if (this.i !== this.s.length) this.fail('unexpected text after the expression');
    return node;
  }

  private fail(what: string): never {
    throw new UnprocessableError(`filter: ${what} at character ${this.i}.`);
  }

  private ws(): void {
    while (this.i < this.s.length && /\s/.test(this.s[this.i]!)) this.i += 1;
  }

  private ident(): string {
    this.ws();
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(this.s.slice(this.i));
    if (!m) this.fail('expected a name');
    this.i += m[0].length;
    return m[0];
  }

  private call(): Node {
    if (++this.nodes > MAX_NODES) this.fail('too many terms');
    const fn = this.ident();
    this.ws();
    if (this.s[this.i] !== '(') this.fail(`expected "(" after ${fn}`);
    this.i += 1;
    const args: Array<Node | Literal> = [];
    for (;;) {
      this.ws();
      if (this.s[this.i] === ')') {
        this.i += 1;
        return { fn, args };
      }
      if (args.length) {
        if (this.s[this.i] !== ',') this.fail('expected "," or ")"');
        this.i += 1;
        this.ws();
      }
      args.push(this.arg());
    }
  }

  private arg(): Node | Literal {
    const c = this.s[this.i];
    if (c === '"' || c === "'") return { value: this.string(c) };
    const num = /^-?\d+(\.\d+)?([eE][-+]?\d+)?/.exec(this.s.slice(this.i));
    if (num) {
      this.i += num[0].length;
      return { value: Number(num[0]) };
    }
    const save = this.i;
    const name = this.ident();
    this.ws();
    if (this.s[this.i] === '(') {
      this.i = save;
      return this.call();
    }
    if (name === 'null') return { value: null };
    return { value: name, ident: name };
  }

  private string(quote: string): string {
    let out = '';
    this.i += 1;
    while (this.i < this.s.length) {
      const c = this.s[this.i]!;
      if (c === '\\') {
        out += this.s[this.i + 1] ?? '';
        this.i += 2;
        continue;
      }
      this.i += 1;
      if (c === quote) return out;
      out += c;
    }
    this.fail('unterminated string');
  }
}

/** A SQL condition (parameters appended to `params`) for a filter expression. */
export function compileFilter(filter: string, params: unknown[]): string {
  if (filter.length > MAX_FILTER) throw new UnprocessableError(`filter: longer than ${MAX_FILTER} characters.`);
  return compile(new Parser(filter).parse(), params);
}

function isNode(a: Node | Literal): a is Node {
  return 'fn' in a;
}

function param(params: unknown[], value: unknown): string {
  params.push(value);
  return `$${params.length}`;
}

function compile(node: Node, params: unknown[]): string {
  const { fn, args } = node;
  if (fn === 'and' || fn === 'or') {
    if (!args.length || args.some((a) => !isNode(a)))
      throw new UnprocessableError(`filter: ${fn}() takes expressions.`);
    const parts: string[] = [];
    const nodes = args as Node[];
    for (let k = 0; k < nodes.length; k += 1) {
      const key = metadataArg(nodes[k]!, 'metadata_key');
      const value = nodes[k + 1] && metadataArg(nodes[k + 1]!, 'metadata_value');
      if (fn === 'and' && key !== null && value != null) {
        // A key and the value after it in one and(): that key has that value.
        parts.push(`(r.metadata ->> ${param(params, key)}) = ${param(params, value)}`);
        k += 1;
      } else parts.push(compile(nodes[k]!, params));
    }
    return `(${parts.join(fn === 'and' ? ' AND ' : ' OR ')})`;
  }
  if (fn === 'not') {
    if (args.length !== 1 || !isNode(args[0]!)) throw new UnprocessableError('filter: not() takes one expression.');
    return `(NOT ${compile(args[0] as Node, params)})`;
  }
  if (fn === 'has') {
    const [field, value] = args;
    if (
      args.length !== 2 ||
      !field ||
      isNode(field) ||
      field.ident !== 'tags' ||
      !value ||
      isNode(value) ||
      typeof value.value !== 'string'
    ) {
      throw new UnprocessableError('filter: has() takes tags and a string: has(tags, "x").');
    }
    return `(${param(params, value.value)} = ANY(r.tags))`;
  }
  const op = OPERATORS[fn];
  if (!op) throw new UnprocessableError(`filter: ${fn}() is not supported.`);
  const [field, value] = args;
  if (args.length !== 2 || !field || isNode(field) || !field.ident || !value || isNode(value)) {
    throw new UnprocessableError(`filter: ${fn}() takes a field and a value.`);
  }
  const name = field.ident;
  if (name === 'metadata_key' && (fn === 'eq' || fn === 'neq') && typeof value.value === 'string') {
    return `(${fn === 'neq' ? 'NOT ' : ''}COALESCE(r.metadata ? ${param(params, value.value)}, false))`;
  }
  if (name === 'metadata_value' && (fn === 'eq' || fn === 'neq') && typeof value.value === 'string') {
    return (
      `(${fn === 'neq' ? 'NOT ' : ''}EXISTS (SELECT 1 FROM jsonb_each_text(COALESCE(r.metadata, ` +
      `'{}'::jsonb)) m WHERE m.value = ${param(params, value.value)}))`
    );
  }
  if (value.value === null) {
    const column = TEXT_FIELDS[name] ?? NUMBER_FIELDS[name] ?? TIME_FIELDS[name];
    if (!column || (fn !== 'eq' && fn !== 'neq'))
      throw new UnprocessableError(`filter: ${fn}(${name}, null) is not supported.`);
    return `(${column} IS ${fn === 'eq' ? '' : 'NOT '}NULL)`;
  }
  if (TEXT_FIELDS[name]) {
    if (typeof value.value !== 'string') throw new UnprocessableError(`filter: ${name} is compared with a string.`);
    return `(${TEXT_FIELDS[name]} ${op} ${param(params, value.value)})`;
  }
  if (NUMBER_FIELDS[name]) {
    const n = typeof value.value === 'number' ? value.value : Number(value.value);
    if (!Number.isFinite(n)) throw new UnprocessableError(`filter: ${name} is compared with a number.`);
    return `(${NUMBER_FIELDS[name]} ${op} ${param(params, n)})`;
  }
  if (TIME_FIELDS[name]) {
    const t = new Date(value.value as string);
    if (typeof value.value !== 'string' || Number.isNaN(t.getTime()))
      throw new UnprocessableError(`filter: ${name} is compared with a time.`);
    return `(${TIME_FIELDS[name]} ${op} ${param(params, t.toISOString())}::timestamptz)`;
  }
  throw new UnprocessableError(`filter: the field ${name} is not supported.`);
}

/** The string of `eq(<field>, "…")`, or null when the node is not that. */
function metadataArg(node: Node, field: string): string | null {
  const [f, v] = node.args;
  if (
    node.fn !== 'eq' ||
    node.args.length !== 2 ||
    !f ||
    isNode(f) ||
    f.ident !== field ||
    !v ||
    isNode(v) ||
    typeof v.value !== 'string'
  )
    return null;
  return v.value;
}
