import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Biome wraps code at 120 columns but never splits a string, a comment or a regular expression,
 * so those lines grow unseen until a reader scrolls sideways. A handful may stay (a URL, a
 * regular expression clearer whole); past that, the long ones must be split by hand.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MAX_COLUMNS = 140;
const MAX_LONG_LINES = 20;

/** `file:line (length)` of every tracked source line longer than MAX_COLUMNS characters. */
function longLines(): string[] {
  const files = execFileSync('git', ['ls-files', '-z', '--', '*.ts', '*.tsx', '*.mjs', '*.js'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\0')
    .filter(Boolean);
  const found: string[] = [];
  for (const file of files) {
    const lines = readFileSync(path.join(ROOT, file), 'utf8').split('\n');
    lines.forEach((line, i) => {
      // Characters, not UTF-16 units or bytes: an arrow or an ellipsis is one column.
      const columns = [...line].length;
      if (columns > MAX_COLUMNS) found.push(`${file}:${i + 1} (${columns})`);
    });
  }
  return found;
}

/**
 * A source file past MAX_FILE_LINES does more than one thing: split it along its seam into
 * modules with one owner each. Tests, test helpers and the bench may run long (a table of cases
 * reads best whole), and so may a generated file (one that says `@generated` or `DO NOT EDIT` in
 * its first lines), which nobody reads to change.
 */
const MAX_FILE_LINES = 400;
const SOURCE_ROOTS = ['libs/', 'services/', 'infra/'];

function isGenerated(head: string): boolean {
  return /@generated|DO NOT EDIT/i.test(head);
}

/** `file (lines)` of every tracked non-test source file under SOURCE_ROOTS longer than MAX_FILE_LINES. */
function longFiles(): string[] {
  const files = execFileSync('git', ['ls-files', '-z', '--', ...SOURCE_ROOTS], { cwd: ROOT, encoding: 'utf8' })
    .split('\0')
    .filter((f) => /\.(ts|tsx|mjs)$/.test(f) && !/\.test\.tsx?$/.test(f) && !/(^|\/)(test|bench)\//.test(f));
  const found: string[] = [];
  for (const file of files) {
    const text = readFileSync(path.join(ROOT, file), 'utf8');
    // Lines as an editor numbers them: a final newline ends the last line, it starts none.
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (lines > MAX_FILE_LINES && !isGenerated(text.split('\n', 5).join('\n'))) found.push(`${file} (${lines})`);
  }
  return found;
}

describe('source lines', () => {
  it(`no tracked non-test source file under ${SOURCE_ROOTS.join(', ')} has more than ${MAX_FILE_LINES} lines`, () => {
    const found = longFiles();
    expect(found, `source files over ${MAX_FILE_LINES} lines:\n${found.join('\n')}`).toEqual([]);
  });

  it(`no more than ${MAX_LONG_LINES} lines of tracked .ts/.tsx/.mjs/.js files exceed ${MAX_COLUMNS} characters`, () => {
    const found = longLines();
    expect(found.length, `lines over ${MAX_COLUMNS} characters:\n${found.join('\n')}`).toBeLessThanOrEqual(
      MAX_LONG_LINES,
    );
  });
});
