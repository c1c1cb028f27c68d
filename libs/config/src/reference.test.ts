import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { controlPlaneSettings } from './index.js';
import { AGENT_CHAPTER, CONTROL_PLANE_CHAPTERS, configurationReference } from './reference.js';
import { settingsOf } from './setting.js';

const DOC = fileURLToPath(new URL('../../../docs/configuration.md', import.meta.url));
const envNames = (settings: Parameters<typeof settingsOf>[0]) => settingsOf(settings).map((s) => s.env);

describe('docs/configuration.md', () => {
  it('documents every control-plane setting exactly once', () => {
    const documented = CONTROL_PLANE_CHAPTERS.flatMap((c) => envNames(c.settings));
    expect(new Set(documented).size).toBe(documented.length);
    expect([...documented].sort()).toEqual([...envNames(controlPlaneSettings)].sort());
  });

  it("gives every setting, the agent's too, a meaning", () => {
    for (const s of [...settingsOf(controlPlaneSettings), ...settingsOf(AGENT_CHAPTER.settings)])
      expect(s.doc.length, s.env).toBeGreaterThan(10);
  });

  it('is current with the declarations', () => {
    const generated = configurationReference();
    if (process.env.SLIPWAY_WRITE_REFERENCE) writeFileSync(DOC, generated);
    expect(readFileSync(DOC, 'utf8'), 'docs/configuration.md is stale: run `pnpm docs:configuration`').toBe(generated);
  });
});
