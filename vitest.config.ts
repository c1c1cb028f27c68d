import { defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/sequencer.js';

export default defineConfig({
  test: {
    include: ['libs/*/src/**/*.test.ts', 'services/*/src/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Each file gets its own database and queue prefix, so files run in parallel safely.
    pool: 'forks',
    // Two files at once on two cores. Three was tried (2026-11-29): CI took 1,107 s against 1,054 s
    // with two, and load-sensitive checks failed. SLIPWAY_TEST_WORKERS=1 runs one file at a time.
    maxWorkers: Number(process.env.SLIPWAY_TEST_WORKERS ?? 2),
    // A worker process runs file after file with the modules it loaded kept: loading the same
    // libraries again in a fresh process for each of ~220 files cost more than most files' own
    // tests (the integration suite: 362 s with a process per file, 184 s without, on this
    // machine). Files still never share data (their own database, queue prefix, ports and
    // processes); a file must leave no global state behind (fake timers, environment variables,
    // listeners on `process`): restore it in afterEach/afterAll.
    isolate: false,
    // Minutes-long files first, so none is left to run alone at the end (test/sequencer.ts).
    sequence: { sequencer: SlowFirstSequencer },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
