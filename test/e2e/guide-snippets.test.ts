import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgentPipeline } from '../support/agent-projects.js';
import type { Pipeline } from '../support/pipeline.js';
import { serviceEnv } from '../support/service-process.js';
import { ShellSession, shellSnippets, type Snippet } from '../support/shell-snippets.js';

/**
 * docs/guide.md as a reader runs it, then the README's taste of the API (which builds on what
 * the guide set up): every ```sh / ```bash block, in order, in one bash session
 * (`set -eo pipefail`), against real api, builder and deployer processes started for this file.
 * The first block that fails (a command exits non-zero, or it outlives its time limit) fails the
 * test, printed with what it wrote. The guide reads `SLIPWAY_URL`, `SLIPWAY_API_KEY` and
 * `SLIPWAY_REPOS` when they are set, which is all this file changes about it. Blocks marked
 * `no-run <reason>` are counted and must stay few.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PORT_BASE = 36_000 + Math.floor(Math.random() * 2_000);
const SNIPPET_TIMEOUT_MS = 150_000;

/**
 * The files, in the order they run, and how many blocks each may skip: starting the system
 * itself, Docker, the published CLI's agent-server build (what these machines cannot do, or what
 * this test does for the reader).
 */
const DOCS = [
  { file: 'docs/guide.md', maxNoRun: 4, minRun: 20 },
  { file: 'README.md', maxNoRun: 2, minRun: 1 },
].map((doc) => ({ ...doc, snippets: shellSnippets(readFileSync(path.join(ROOT, doc.file), 'utf8')) }));
const snippets = DOCS.flatMap((doc) => doc.snippets.map((s) => ({ ...s, file: doc.file })));

describe('docs/guide.md and README.md', () => {
  it.each(DOCS)('$file marks only a few blocks no-run, each with its reason', ({ snippets: own, maxNoRun, minRun }) => {
    const skipped = own.filter((s) => s.noRun);
    expect(own.length - skipped.length).toBeGreaterThanOrEqual(minRun);
    expect(skipped.length, skipped.map((s) => `line ${s.line}: ${s.noRun}`).join('\n')).toBeLessThanOrEqual(maxNoRun);
    for (const s of skipped) expect(s.noRun!.length, `line ${s.line}`).toBeGreaterThan(10);
  });

  describe('every other shell block runs, in order, in one session', () => {
    let pipeline: Pipeline;
    let session: ShellSession;
    let scratch: string;
    let repos: string;

    beforeAll(async () => {
      scratch = mkdtempSync(path.join(tmpdir(), 'slipway-guide-'));
      repos = mkdtempSync(path.join(tmpdir(), 'slipway-guide-repos-'));
      pipeline = await startAgentPipeline(repos, PORT_BASE);
      session = new ShellSession(
        scratch,
        {
          // What `pnpm slipway` needs to reach this file's database, as `npm start` would have it.
          ...serviceEnv(pipeline.api),
          LOG_LEVEL: 'warn',
          SLIPWAY_URL: pipeline.http.baseUrl,
          SLIPWAY_API_KEY: pipeline.api.adminKey,
          SLIPWAY_REPOS: repos,
          // Files the guide makes with mktemp go away with the file's scratch directory.
          TMPDIR: scratch,
        },
        ROOT,
      );
    }, 120_000);

    afterAll(async () => {
      session?.close();
      await pipeline?.stop();
      for (const dir of [scratch, repos]) if (dir) rmSync(dir, { recursive: true, force: true });
    }, 60_000);

    it('runs them all', async () => {
      const run: Snippet[] = [];
      for (const snippet of snippets.filter((s) => !s.noRun)) {
        const failure = await session.run(snippet, SNIPPET_TIMEOUT_MS);
        if (failure) {
          throw new Error(
            `${snippet.file}, the block at line ${snippet.line} failed (${failure.reason}):\n` +
              `${snippet.code}\n--- its output ---\n${failure.output}\n--- api log tail ---\n${pipeline.apiProcess.output().slice(-3000)}`,
          );
        }
        run.push(snippet);
      }
      // SLIPWAY_GUIDE_TRANSCRIPT=<file> keeps what the guide printed, to compare with its comments.
      if (process.env.SLIPWAY_GUIDE_TRANSCRIPT)
        writeFileSync(process.env.SLIPWAY_GUIDE_TRANSCRIPT, session.transcript());
      expect(run.length).toBe(snippets.filter((s) => !s.noRun).length);
    }, 600_000);
  });
});
