import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * docs/architecture.md is where a newcomer starts: every file it names must exist, and every
 * function, class or method it names (a camelCase or CamelCase word in backticks) must still be
 * in the code. A rename or a removal that leaves the document behind fails here.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const doc = readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');
const quoted = [...doc.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);

describe('docs/architecture.md', () => {
  it('names only files and directories that exist', () => {
    const paths = [...new Set(quoted.filter((t) => /^(libs|services|test|infra|bench|docs|\.ci)\/\S*$/.test(t)))];
    expect(paths.length).toBeGreaterThan(50);
    expect(paths.filter((p) => !existsSync(path.join(ROOT, p.replace(/[:,].*$/, ''))))).toEqual([]);
  });

  it('names only functions, classes and methods that are in the code', () => {
    const names = [
      ...new Set(
        quoted
          .map((t) => /^([A-Za-z_]\w*)(\(\))?$/.exec(t)?.[1])
          .filter((t): t is string => !!t && /[a-z][A-Z]|^[A-Z][a-z]+[A-Z]/.test(t)),
      ),
    ];
    expect(names.length).toBeGreaterThan(15);
    const inCode = (name: string) => {
      try {
        execFileSync('git', ['grep', '-qw', name, '--', 'libs', 'services', 'infra', 'bench'], { cwd: ROOT });
        return true;
      } catch {
        return false;
      }
    };
    expect(names.filter((n) => !inCode(n))).toEqual([]);
  });
});
