import { defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/sequencer.js';

export default defineConfig({
  test: {
    include: ['libs/*/src/**/*.test.ts', 'services/*/src/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Each file gets its own database and queue prefix, so files run in parallel safely.
    pool: 'forks',
    // Three files at once on two cores: most e2e, browser and agent files spend their time waiting
    // (builds' installs, cron ticks, health probes, TTL sweeps), so a third overlaps that waiting.
    // SLIPWAY_TEST_WORKERS sets another number (1 to debug one file's output in order).
    maxWorkers: Number(process.env.SLIPWAY_TEST_WORKERS ?? 3),
    // Minutes-long files first, so none is left to run alone at the end (test/sequencer.ts).
    sequence: { sequencer: SlowFirstSequencer },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
