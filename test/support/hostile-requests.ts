/**
 * A seeded generator of hostile HTTP requests for the fuzz test. Bodies and queries start from
 * what a route's own joi schema accepts (so requests get past validation into handlers, services
 * and SQL) and are then broken in the ways attackers and careless clients break them: wrong
 * types, huge and deep values, NUL and control characters, unicode edge cases, SQL and path
 * traversal strings, prototype-pollution keys, malformed JSON, wrong methods and content types.
 * Everything comes from one seed, so a failing sequence can be generated again.
 */

/** sfc32: small, fast, and the same sequence for the same seed on every machine. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(readonly seed: number) {
    this.a = 0x9e3779b9;
    this.b = 0x243f6a88;
    this.c = 0xb7e15162;
    this.d = seed >>> 0;
    for (let i = 0; i < 15; i += 1) this.next();
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.a >>>= 0;
    this.b >>>= 0;
    this.c >>>= 0;
    this.d >>>= 0;
    const t = (this.a + this.b + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0;
    this.c = (this.c + t) >>> 0;
    return t / 4294967296;
  }

  int(max: number): number {
    return Math.floor(this.next() * max);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  hex(bytes: number): string {
    let out = '';
    for (let i = 0; i < bytes; i += 1) out += this.int(256).toString(16).padStart(2, '0');
    return out;
  }

  uuid(): string {
    const h = this.hex(16);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
  }
}

/** Strings that have broken servers somewhere. None of them names an ORM or driver. */
export const HOSTILE_STRINGS: readonly string[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\u0000'.repeat(64),
  '\ud800',
  'x\udfff',
  '\udc00\ud800',
  '😀'.slice(0, 1),
  '\u202eevil\u202c',
  '\ufeffbom',
  '\u200b\u200c\u200d',
  '👩‍👩‍👧‍👦',
  'é vs é',
  'İıẞ',
  'ﷺ',
  '\u0085\u2028\u2029',
  '\u0001\u0007\u001b[31mred\u001b[0m\u007f',
  '\r\n\r\nX-Injected: 1',
  '\t\v\f',
  "' OR '1'='1",
  '"; DROP TABLE deployments; --',
  "'); DELETE FROM api_keys; --",
  '1 UNION SELECT password FROM users',
  '%',
  '%%',
  '\\',
  "\\'",
  '_%',
  '../../../../etc/passwd',
  '..\\..\\..\\windows\\win.ini',
  '/etc/shadow',
  'file:///etc/passwd',
  '....//....//etc/hosts',
  '%2e%2e%2f%2e%2e%2f',
  '..%00/',
  '${7*7}',
  '{{7*7}}',
  '#{7*7}',
  '<script>alert(1)</script>',
  '"><img src=x onerror=alert(1)>',
  'javascript:alert(1)',
  'http://127.0.0.1:1/',
  'http://[::1]:1/x',
  'gopher://127.0.0.1:1/_x',
  '__proto__',
  'constructor',
  'NaN',
  '-0',
  '1e309',
  '0x10',
  '9007199254740993',
  'true',
  'null',
  'undefined',
  '[]',
  '{}',
  '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  'A'.repeat(300),
  'A'.repeat(70_000),
  '🚀'.repeat(5_000),
  'Ω'.repeat(4_097),
];

const HOSTILE_NUMBERS: readonly number[] = [
  -1,
  0,
  -0,
  1.5,
  0.1,
  2 ** 31,
  2 ** 31 - 1,
  -(2 ** 31) - 1,
  2 ** 53 + 2,
  Number.MAX_SAFE_INTEGER,
  1e21,
  1e308,
  -1e308,
  5e-324,
];

/** Keys that pollute prototypes or confuse naive merges and query builders. */
export const HOSTILE_KEYS: readonly string[] = [
  '__proto__',
  'constructor',
  'prototype',
  '__defineGetter__',
  'hasOwnProperty',
  'toString',
  'valueOf',
  '',
  'a.b',
  '$where',
  '$gt',
  'a\u0000b',
  '\ud800',
  'x'.repeat(5_000),
];

/** Names of a route's fields mapped to values the fixtures made real (ids, URLs). */
export type Known = Record<string, readonly string[]>;

/** Strings tried, in order, against a `pattern` rule before giving up on pleasing it. */
const PATTERN_CANDIDATES = [
  'fuzz-app',
  'abc',
  'a1',
  'x-1',
  'ABC_1',
  'main',
  '1.0.0',
  'S256',
  'agents',
  'build',
  'info',
  'a',
  '1',
];

interface Described {
  type: string;
  flags?: { presence?: string; only?: boolean; default?: unknown };
  allow?: unknown[];
  rules?: Array<{ name: string; args?: Record<string, any> }>;
  keys?: Record<string, Described>;
  patterns?: Array<{ schema?: Described; rule?: Described }>;
  items?: Described[];
  matches?: Array<{ schema?: Described; then?: Described; otherwise?: Described }>;
  whens?: Array<{ then?: Described; otherwise?: Described }>;
}

const ruleOf = (d: Described, name: string) => d.rules?.find((r) => r.name === name)?.args;

/** Defines `key` as an own, enumerable property, so `__proto__` is serialised as a key too. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** JSON values a server rarely expects where it expects something else. */
export function hostileValue(rng: Rng, depth = 0): unknown {
  switch (rng.int(10)) {
    case 0:
    case 1:
    case 2:
      return rng.pick(HOSTILE_STRINGS);
    case 3:
      return rng.pick(HOSTILE_NUMBERS);
    case 4:
      return rng.pick([null, true, false]);
    case 5:
      return depth > 2 ? [] : Array.from({ length: rng.int(4) }, () => hostileValue(rng, depth + 1));
    case 6: {
      const o: Record<string, unknown> = {};
      if (depth <= 2)
        for (let i = rng.int(3); i >= 0; i -= 1) setOwn(o, rng.pick(HOSTILE_KEYS), hostileValue(rng, depth + 1));
      return o;
    }
    case 7:
      return deepValue(rng.pick([20, 31, 33, 200]));
    case 8:
      return rng.chance(0.5)
        ? Array.from({ length: 20_000 }, (_, i) => i)
        : Object.fromEntries(Array.from({ length: 3_000 }, (_, i) => [`k${i}`, i]));
    default:
      return rng.pick(['', 0, [], {}]);
  }
}

function deepValue(depth: number): unknown {
  let v: unknown = 'bottom';
  for (let i = 0; i < depth; i += 1) v = i % 2 ? [v] : { d: v };
  return v;
}

/** How hard `valueFor` breaks what it generates. */
export interface Breakage {
  /** Chance that any one value is replaced by something hostile (often of another type). */
  breakRate: number;
  /**
   * Chance that a free-text string (no pattern, enum, UUID or URL rule) carries a hostile
   * payload while staying a string: such values pass validation and reach handlers and SQL.
   */
  taintRate: number;
}

/** Payloads a free-text field may carry and still be a string. */
const TAINTS: readonly string[] = [
  '\u0000',
  'a\u0000',
  '\ud800',
  '\udc00x',
  "'; --",
  '%_\\',
  '😀',
  '\u202e',
  '\u0001\u001b',
  ' '.repeat(3),
  'A'.repeat(5_000),
];

/**
 * A value `described` accepts, as far as a generic walk can tell, preferring `known` real
 * values for fields of those names; then broken here and there as `breakage` says.
 */
export function valueFor(
  described: Described | undefined,
  rng: Rng,
  known: Known,
  breakage: Breakage,
  field = '',
  depth = 0,
): unknown {
  if (rng.chance(breakage.breakRate)) return hostileValue(rng);
  if (!described) return rng.pick(['abc', 1, true]);
  if (known[field]?.length && rng.chance(0.8)) return rng.pick(known[field]!);
  const only = described.flags?.only ? (described.allow ?? []).filter((v) => v !== null && typeof v !== 'object') : [];
  if (only.length) return rng.pick(only);
  switch (described.type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [key, child] of Object.entries(described.keys ?? {})) {
        if (child.flags?.presence === 'required' ? rng.chance(0.97) : rng.chance(0.6)) {
          setOwn(out, key, valueFor(child, rng, known, breakage, key, depth + 1));
        }
      }
      if (!described.keys && described.patterns?.length && depth < 6) {
        for (let i = rng.int(3); i > 0; i -= 1)
          setOwn(out, `k${rng.hex(2)}`, valueFor(described.patterns[0]!.rule, rng, known, breakage, '', depth + 1));
      }
      if (rng.chance(breakage.breakRate)) setOwn(out, rng.pick(HOSTILE_KEYS), hostileValue(rng));
      return out;
    }
    case 'array': {
      const item = described.items?.length ? rng.pick(described.items) : undefined;
      return depth > 6
        ? []
        : Array.from({ length: rng.int(3) + (ruleOf(described, 'min')?.limit ?? 0) }, () =>
            valueFor(item, rng, known, breakage, field, depth + 1),
          );
    }
    case 'alternatives': {
      const match = described.matches?.length ? rng.pick(described.matches) : undefined;
      return valueFor(match?.schema ?? match?.then ?? match?.otherwise, rng, known, breakage, field, depth);
    }
    case 'number': {
      const min = ruleOf(described, 'min')?.limit ?? 0;
      const max = ruleOf(described, 'max')?.limit ?? min + 10;
      const n = min + rng.next() * (Math.min(max, min + 10) - min);
      return ruleOf(described, 'integer') !== undefined || described.rules?.some((r) => r.name === 'integer')
        ? Math.round(n)
        : n;
    }
    case 'boolean':
      return rng.chance(0.5);
    case 'date':
      return new Date(Date.UTC(2026, 0, 1 + rng.int(300))).toISOString();
    case 'string':
      return plausibleString(described, rng, breakage.taintRate);
    default: {
      const branch = described.whens?.[0];
      if (branch && depth < 8)
        return valueFor(rng.chance(0.5) ? branch.then : branch.otherwise, rng, known, breakage, field, depth);
      return rng.pick(['abc', 1, true, null]);
    }
  }
}

function plausibleString(described: Described, rng: Rng, taintRate: number): string {
  if (described.rules?.some((r) => r.name === 'guid')) return rng.uuid();
  if (described.rules?.some((r) => r.name === 'uri'))
    return rng.pick(['https://example.com/x', 'https://idp.example.com/token', 'http://127.0.0.1:1/']);
  if (described.rules?.some((r) => r.name === 'isoDate')) return new Date(Date.UTC(2026, 0, 1)).toISOString();
  const pattern = ruleOf(described, 'pattern')?.regex as string | undefined;
  if (pattern) {
    const body = /^\/(.*)\/([a-z]*)$/s.exec(pattern);
    const regex = body ? new RegExp(body[1]!, body[2]) : undefined;
    const hit = PATTERN_CANDIDATES.find((c) => regex?.test(c));
    if (hit) return hit === 'fuzz-app' ? `fuzz-${rng.hex(3)}` : hit;
  }
  const max = ruleOf(described, 'max')?.limit ?? 40;
  const text = `fuzz ${rng.hex(4)}`.slice(0, Math.max(1, max));
  if (pattern || !rng.chance(taintRate)) return text;
  const taint = rng.pick(TAINTS);
  return rng.chance(0.5) ? (text + taint).slice(0, Math.max(1, max)) : taint;
}

/** The joi description of a schema, or undefined. */
export function describe(schema: { describe(): unknown } | undefined): Described | undefined {
  return schema ? (schema.describe() as Described) : undefined;
}

/** JSON text a parser should refuse, or accept only to find odd values inside. */
export const MALFORMED_JSON: readonly string[] = [
  '{',
  '{"a":',
  '[1,2',
  '{"a":1}}',
  "{'a':1}",
  '{"a":NaN}',
  '{"a":1e999}',
  '{"a":-1e999}',
  '{"a":"\\ud800"}',
  '{"a":"\\u0000"}',
  '{"\\u0000":1}',
  '{"a":1,}',
  'nul',
  'undefined',
  '\ufeff{"a":1}',
  '{"a":"\u0000"}',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '"just a string"',
  '12345',
  'null',
  '[]',
  '['.repeat(100_000),
  '{"a":' + '['.repeat(10_000) + ']'.repeat(10_000) + '}',
  '{"a":"' + 'x'.repeat(1_200_000) + '"}',
];

export const CONTENT_TYPES: readonly string[] = [
  'application/json',
  'application/json; charset=utf-8',
  'application/merge-patch+json',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/gzip',
  'application/octet-stream',
  '*/*',
];
