import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { phaseTableMarkdown } from './phase-table.js';

const DOC = path.resolve(__dirname, '../../../docs/architecture.md');
const BEGIN = '<!-- phases:begin: generated from libs/pipeline/src/phases.ts (pnpm docs:phases) -->';
const END = '<!-- phases:end -->';

/** docs/architecture.md's phase table is `PHASES` rendered; SLIPWAY_WRITE_REFERENCE=1 rewrites it. */
describe('the phase table in docs/architecture.md', () => {
  it('is the one PHASES renders', () => {
    const doc = readFileSync(DOC, 'utf8');
    const start = doc.indexOf(BEGIN);
    const end = doc.indexOf(END);
    expect(start, `docs/architecture.md has no ${BEGIN}`).toBeGreaterThanOrEqual(0);
    expect(end).toBeGreaterThan(start);
    const rendered = `${BEGIN}\n${phaseTableMarkdown()}\n${END}`;
    const current = doc.slice(start, end + END.length);
    if (process.env.SLIPWAY_WRITE_REFERENCE === '1' && current !== rendered)
      writeFileSync(DOC, doc.slice(0, start) + rendered + doc.slice(end + END.length));
    else expect(current, 'run pnpm docs:phases').toBe(rendered);
  });

  it('names every phase with its job and statuses', () => {
    const table = phaseTableMarkdown();
    for (const row of [
      '| enqueue |',
      '| build |',
      '| rollout |',
      "`RevisionFlow.complete('build')`",
      '`rollout.revision`',
    ])
      expect(table).toContain(row);
  });
});
