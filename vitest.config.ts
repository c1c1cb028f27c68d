import { configDefaults, defineConfig } from 'vitest/config';
import { laneOf, WAITING_FILES } from './test/lanes.js';
import SlowFirstSequencer from './test/sequencer.js';

const lane = laneOf(process.env.SLIPWAY_TEST_LANE);

export default defineConfig({
  test: {
    include:
      lane === 'waiting'
        ? WAITING_FILES
        : ['libs/*/src/**/*.test.ts', 'services/*/src/**/*.test.ts', 'test/**/*.test.ts'],
    // npm test runs the files that mostly wait in a lane of their own, one at a time (test/lanes.ts).
    exclude: lane === 'main' ? [...configDefaults.exclude, ...WAITING_FILES] : configDefaults.exclude,
    globalSetup: ['test/global-setup.ts'],
    // Each file gets its own database and queue prefix, so files run in parallel safely.
    pool: 'forks',
    // Two files at once on two cores. Three was tried twice: on a slower machine CI took 1,107 s
    // against 1,054 s with two and load-sensitive checks failed; on a faster one 672 s against 854 s,
    // green, because two files waiting on clocks side by side left both cores idle. Those files have
    // a lane of their own instead (test/lanes.ts). SLIPWAY_TEST_WORKERS=1 runs one file at a time.
    maxWorkers: lane === 'waiting' ? 1 : Number(process.env.SLIPWAY_TEST_WORKERS ?? 2),
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
    // expect.poll's own default (1 s) is a clock a loaded machine misses (a console page waiting
    // on the api that waits on git): a poll that holds returns at once, so a longer limit only
    // changes how long a real failure takes to report.
    expect: { poll: { timeout: 10_000 } },
    reporters: ['default'],
  },
});
