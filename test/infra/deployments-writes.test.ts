import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * One owner for writes of the `deployments` row: every INSERT, UPDATE and DELETE of it is a
 * named method of `DeploymentRepository` (libs/db/src/repositories/deployment.repository.ts),
 * and every status change is the one conditional UPDATE of libs/db/src/repositories/deployment-status.ts
 * (`transitionDeployment`, and `readyBegunListenerDeployments` for a batch of listener rollouts). Any other source file under libs/ or services/
 * that writes the table (raw SQL, or TypeORM on the `Deployment` entity) fails here; migrations
 * and tests are not product code and may.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const REPOSITORIES = 'libs/db/src/repositories';
const OWNER = `${REPOSITORIES}/deployment.repository.ts`;
const STATUS_OWNER = `${REPOSITORIES}/deployment-status.ts`;

/** Raw SQL writing `deployments` (any spacing, any case; `deployments_…` and other tables are not it). */
const SQL_WRITE =
  /\b(?:UPDATE(?:\s+ONLY)?|INSERT\s+INTO|DELETE\s+FROM|MERGE\s+INTO|TRUNCATE(?:\s+TABLE)?)\s+(?:public\.)?"?deployments"?(?![\w"])/gi;
/** TypeORM writes of the `Deployment` entity. */
const ENTITY_WRITE = new RegExp(
  String.raw`\.(?:insert|update|upsert|delete|save|remove|softDelete|softRemove|increment|decrement)\(\s*Deployment\b` +
    String.raw`|\.into\(\s*Deployment\b|getRepository\(\s*Deployment\b`,
  'g',
);

const SOURCE = /\.(?:[cm]?[jt]sx?|sql)$/;
const EXCLUDED = (file: string) =>
  file.startsWith('libs/db/src/migrations/') ||
  /\.test\.[cm]?[jt]sx?$/.test(file) ||
  /(^|\/)(__tests__|node_modules)\//.test(file);

/** Source files under libs/ and services/, tracked or new (not ignored). */
function sourceFiles(): string[] {
  const out = execFileSync(
    'git',
    ['ls-files', '--cached', '--others', '--exclude-standard', '--', 'libs', 'services'],
    { cwd: ROOT, encoding: 'utf8' },
  );
  return [...new Set(out.split('\n'))].filter((f) => SOURCE.test(f) && !EXCLUDED(f));
}

/** Each write of `deployments` in the file, as `file:line: text`. */
function writesIn(file: string, text: string): string[] {
  const found: string[] = [];
  for (const pattern of [SQL_WRITE, ENTITY_WRITE]) {
    for (const m of text.matchAll(pattern))
      found.push(`${file}:${text.slice(0, m.index).split('\n').length}: ${m[0].replace(/\s+/g, ' ')}`);
  }
  return found;
}

function readSource(file: string): string | null {
  try {
    return readFileSync(path.join(ROOT, file), 'utf8');
  } catch {
    return null; // deleted in the work tree, still in the index
  }
}

describe('writes of the deployments row', () => {
  it('are in DeploymentRepository and transitionDeployment only', () => {
    const files = sourceFiles();
    expect(files.length).toBeGreaterThan(100);
    const elsewhere = files
      .filter((f) => f !== OWNER && f !== STATUS_OWNER)
      .flatMap((f) => writesIn(f, readSource(f) ?? ''));
    expect(elsewhere).toEqual([]);
  });

  it('the owners hold them: status changes in transitionDeployment alone', () => {
    const owner = readFileSync(path.join(ROOT, OWNER), 'utf8');
    const status = readFileSync(path.join(ROOT, STATUS_OWNER), 'utf8');
    expect(writesIn(OWNER, owner).length).toBeGreaterThan(5);
    expect(writesIn(STATUS_OWNER, status)).toHaveLength(1);
    expect(status).toMatch(/UPDATE deployments d SET status = /);
    // No UPDATE of the repository's sets `status` (its WHERE clauses may read it).
    const updates = [...owner.matchAll(/UPDATE deployments\b([\s\S]*?)\bWHERE\b/g)].map((m) => m[1]!);
    expect(updates.length).toBeGreaterThan(5);
    expect(updates.filter((set) => /(?:\bSET|,)\s*status\s*=/i.test(set))).toEqual([]);
  });
});
