/**
 * Text Postgres can store. A `text` or `jsonb` value cannot hold U+0000 (SQLSTATE 22021 /
 * 22P05), and a UTF-16 surrogate without its partner is not a character at all: the driver
 * would silently turn it into U+FFFD. The api refuses such input with a 422 naming the field;
 * text the workers produce (app output, failure reasons) is made storable instead, because a
 * log line or a status message must never be lost over one byte.
 */

/** U+0000, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

/** What replaces an unstorable character: U+FFFD, the Unicode replacement character. */
export const REPLACEMENT_CHARACTER = '\uFFFD';

/** True when `text` holds U+0000 or an unpaired surrogate. */
export function hasUnstorableCharacter(text: string): boolean {
  return UNSTORABLE.test(text);
}

/** `text` with every U+0000 and unpaired surrogate replaced by U+FFFD; other text unchanged. */
export function toStorableText(text: string): string {
  return hasUnstorableCharacter(text) ? text.replace(UNSTORABLE_ALL, REPLACEMENT_CHARACTER) : text;
}

/**
 * A copy of a JSON-like value with every string, keys included, made storable (for `jsonb`).
 * JSON.stringify would only escape the characters (`\u0000`, `\ud800`), which jsonb refuses too.
 */
export function toStorableValue<T>(value: T): T {
  if (typeof value === 'string') return toStorableText(value) as T;
  if (Array.isArray(value)) return value.map(toStorableValue) as T;
  if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [toStorableText(k), toStorableValue(v)])) as T;
  }
  return value;
}
