import { hasUnstorableCharacter } from '@slipway/domain';
import type { Source, ValidationIssue } from '../schemas/validation-error.js';

/**
 * Deeper than this, a request value is refused. Real bodies nest a handful of levels
 * (resource_spec → containers → volume mounts); a deeper one only exists to exhaust a stack:
 * joi's, JSON.stringify's or Postgres' jsonb parser's.
 */
export const MAX_DEPTH = 32;
/** At most this many issues of this kind per request: a body of a million NULs gets a short answer. */
const MAX_ISSUES = 50;

export const UNSUPPORTED_CHARACTER_MSG = 'String should not contain U+0000 or an unpaired UTF-16 surrogate';
export const TOO_DEEP_MSG = `Value should not be nested more than ${MAX_DEPTH} levels deep`;

type Path = Array<string | number>;

/**
 * Problems with the raw shape of one part of a request, before any schema looks at it: a string,
 * key or value, at any depth, that Postgres cannot store (docs/api.md, Errors,
 * `string_unsupported_character`), and nesting deeper than MAX_DEPTH. Every part of every route
 * passes here, free-form objects (resource_spec, labels) and fields no schema knows included.
 * Iterative, so a hostile depth cannot overflow this walk either.
 */
export function inputIssues(value: unknown, source: Source): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const stack: Array<{ value: unknown; path: Path }> = [{ value, path: [] }];
  while (stack.length && issues.length < MAX_ISSUES) {
    const { value: node, path } = stack.pop()!;
    if (typeof node === 'string') {
      if (hasUnstorableCharacter(node)) issues.push(unsupported([source, ...path]));
      continue;
    }
    if (!node || typeof node !== 'object') continue;
    if (path.length >= MAX_DEPTH) {
      issues.push({ loc: [source, ...path], msg: TOO_DEEP_MSG, type: 'too_deep' });
      continue;
    }
    const entries: Array<[string | number, unknown]> = Array.isArray(node)
      ? node.map((v, i) => [i, v])
      : Object.entries(node);
    // Pushed in reverse, so children are visited in document order.
    for (let i = entries.length - 1; i >= 0; i -= 1) {
      const [key, child] = entries[i]!;
      if (typeof key === 'string' && hasUnstorableCharacter(key)) issues.push(unsupported([source, ...path, key]));
      else stack.push({ value: child, path: [...path, key] });
    }
  }
  return issues.slice(0, MAX_ISSUES);
}

function unsupported(loc: Path): ValidationIssue {
  return { loc, msg: UNSUPPORTED_CHARACTER_MSG, type: 'string_unsupported_character' };
}

/** True when `loc` is `prefix` or lies under it. */
export function locWithin(loc: Path, prefix: Path): boolean {
  return prefix.length <= loc.length && prefix.every((segment, i) => loc[i] === segment);
}
