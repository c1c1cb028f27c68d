import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * docs/architecture.md is where a newcomer starts: every file it names must exist, and every
 * function, class or method it names in backticks must still be in the code. A rename or a
 * removal that leaves the document behind fails here.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const doc = readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');
const quoted = [...new Set([...doc.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!))];
const tracked = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
const TOP_LEVEL = new Set(tracked.filter((f) => f.includes('/')).map((f) => f.slice(0, f.indexOf('/'))));
const SOURCE = ['*.ts', '*.tsx', '*.mjs', '*.js'];

/**
 * A path the document names: anchored at the repository root (`libs/db/src/index.ts`), or a file
 * or directory named relative to the component the sentence is about (`status.ts`, `src/queue.ts`,
 * `container/`). Build output (`dist`) is not tracked, so it is not checked.
 */
function pathOf(text: string): string | null {
  const p = text.replace(/[:,].*$/, '');
  if (/\s|^\/|[<>{}*]/.test(p) || p.split('/').includes('dist')) return null;
  const anchored = p.includes('/') && TOP_LEVEL.has(p.slice(0, p.indexOf('/')));
  if (anchored || /\.(ts|tsx|mjs|js|md|sql)$/.test(p) || /^[\w.-]+\/([\w.-]+\/)*$/.test(p)) return p;
  return null;
}

function exists(p: string): boolean {
  const dir = p.endsWith('/') ? p : `${p}/`;
  const anchored = TOP_LEVEL.has(p.slice(0, p.indexOf('/')));
  return tracked.some((f) =>
    anchored ? f === p || f.startsWith(dir) : f === p || f.endsWith(`/${p}`) || f.includes(`/${dir}`),
  );
}

/**
 * The code names in a backticked span: `transitionDeployment`, `insertFirst()`, `PhaseGuard`,
 * `Queryable`, `DEPLOYMENT_TRANSITIONS`, `RevisionFlow.onHandOff`,
 * `DeploymentActivity.record(deploymentId)`. A single lower-case word (`attempt`, `maintenance`)
 * is prose, not a name, unless it is called (`attach()`) or follows a class (`ListenerPoll.glance`).
 */
function namesIn(text: string): string[] {
  const m = /^([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(\([^()]*\))?$/.exec(text);
  if (!m || pathOf(text)) return [];
  const parts = m[1]!.split('.');
  const codeLike = (w: string) => /[a-z][A-Z]|^[A-Z][a-z][a-z0-9]*$|^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$/.test(w);
  if (parts.length > 1 && !codeLike(parts[0]!)) return [];
  if (parts.length === 1 && !codeLike(parts[0]!) && !m[2]) return [];
  return parts;
}

function inCode(name: string): boolean {
  try {
    execFileSync('git', ['grep', '-qw', name, '--', ...SOURCE], { cwd: ROOT });
    return true;
  } catch {
    return false;
  }
}

describe('docs/architecture.md', () => {
  it('names only files and directories that exist', () => {
    const paths = quoted.map(pathOf).filter((p): p is string => p !== null);
    expect(paths.length).toBeGreaterThan(80);
    expect(paths.filter((p) => !exists(p))).toEqual([]);
  });

  it('names only functions, classes and methods that are in the code', () => {
    const names = [...new Set(quoted.flatMap(namesIn))];
    expect(names.length).toBeGreaterThan(40);
    expect(names.filter((n) => !inCode(n))).toEqual([]);
  });
});
