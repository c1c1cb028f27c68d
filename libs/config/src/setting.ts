/**
 * A setting is one environment variable declared once: its name, its joi rule (with its
 * default), what it does, and how its value enters Config. The schema every process validates
 * with, the TypeScript type of Config's plain parts, and the operators' table in
 * docs/configuration.md are all computed from these declarations (`schemaOf`, `ValuesOf`,
 * `configurationReference`), so none of them can drift from another.
 */
import Joi from 'joi';

export interface Setting<T> {
  readonly env: string;
  readonly rule: Joi.Schema;
  /** What it does, as the docs table says it. */
  readonly doc: string;
  /** The default as the docs show it when the rule's own default does not say it well (computed, long, in bytes). */
  readonly shown?: string;
  /** The validated value as Config holds it. */
  readonly read: (raw: any) => T;
}

/** Settings grouped as Config nests them: `{ pipeline: { buildDeadlineMs: Setting<number> } }`. */
export interface Group {
  readonly [key: string]: Setting<unknown> | Group;
}

/** A group's values: each Setting<T> becomes a T, nested groups stay nested. */
export type ValuesOf<G> = { -readonly [K in keyof G]: G[K] extends Setting<infer T> ? T : ValuesOf<G[K]> };

interface Options<T> {
  shown?: string;
  read?: (raw: any) => T;
}

export function setting<T>(env: string, rule: Joi.Schema, doc: string, options: Options<T> = {}): Setting<T> {
  return { env, rule, doc, shown: options.shown, read: options.read ?? ((raw) => raw as T) };
}

interface Bounds {
  min?: number;
  max?: number;
  shown?: string;
}

function bounded(rule: Joi.NumberSchema, { min, max }: Bounds): Joi.NumberSchema {
  const low = min === undefined ? rule : rule.min(min);
  return max === undefined ? low : low.max(max);
}

/** A whole number with a default. */
export const int = (env: string, fallback: number, doc: string, bounds: Bounds = {}): Setting<number> =>
  setting<number>(env, bounded(Joi.number().integer(), bounds).default(fallback), doc, { shown: bounds.shown });

/** A number (fractions allowed) with a default. */
export const num = (env: string, fallback: number, doc: string, bounds: Bounds = {}): Setting<number> =>
  setting<number>(env, bounded(Joi.number(), bounds).default(fallback), doc, { shown: bounds.shown });

/** A duration in milliseconds (at least 50). */
export const ms = (env: string, fallback: number, doc: string, shown?: string): Setting<number> =>
  int(env, fallback, doc, { min: 50, shown });

/** A string with a default. */
export const text = (env: string, fallback: string, doc: string): Setting<string> =>
  setting<string>(env, Joi.string().default(fallback), doc);

/** One of a few words. */
export const oneOf = <const V extends string>(
  env: string,
  values: readonly V[],
  fallback: V,
  doc: string,
): Setting<V> =>
  setting<V>(
    env,
    Joi.string()
      .valid(...values)
      .default(fallback),
    doc,
  );

/** An optional value: `undefined` when unset. */
export const optional = <T = string>(
  env: string,
  rule: Joi.Schema,
  doc: string,
  shown?: string,
): Setting<T | undefined> => setting<T | undefined>(env, rule, doc, { shown });

const isSetting = (entry: Setting<unknown> | Group): entry is Setting<unknown> =>
  typeof (entry as Setting<unknown>).env === 'string' && 'rule' in entry;

/** Every setting of a group, depth first, in declaration order. */
export function settingsOf(group: Group): Setting<unknown>[] {
  return Object.values(group).flatMap((entry) => (isSetting(entry) ? [entry] : settingsOf(entry)));
}

/** The joi keys of a group: one per variable. Two settings may not claim one variable. */
export function schemaKeysOf(...groups: Group[]): Record<string, Joi.Schema> {
  const keys: Record<string, Joi.Schema> = {};
  for (const s of groups.flatMap(settingsOf)) {
    if (keys[s.env] && keys[s.env] !== s.rule) throw new Error(`${s.env} is declared twice`);
    keys[s.env] = s.rule;
  }
  return keys;
}

/** A group's Config values from a validated environment. */
export function valuesOf<G extends Group>(group: G, validated: Record<string, unknown>): ValuesOf<G> {
  const out: Record<string, unknown> = {};
  for (const [key, entry] of Object.entries(group))
    out[key] = isSetting(entry) ? entry.read(validated[entry.env]) : valuesOf(entry, validated);
  return out as ValuesOf<G>;
}
