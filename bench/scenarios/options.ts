/** How long and how much each scenario measures; `--quick` shrinks everything for CI's smoke run. */
export interface BenchOptions {
  durationSec: number;
  warmupSec: number;
  /** Sequential creates timed for the hand-over latency. */
  handoffSamples: number;
  /** Creates in the burst. */
  burst: number;
  /** Row counts compared by the list scenario (small, large). */
  listRows: [number, number];
  /** Timed runs per list query. */
  listRuns: number;
  /**
   * How long the idle stack is left alone before and while its CPU time is measured. Start-up
   * leaves work behind for about 25 s (V8 shrinking the start-up heap: one collection of some
   * 150 ms CPU per process), which is not what an idle stack costs.
   */
  idleSettleSec: number;
  idleSec: number;
}

export const FULL: BenchOptions = { durationSec: 10, warmupSec: 3, handoffSamples: 300, burst: 10_000, listRows: [1_000, 100_000], listRuns: 1_000, idleSettleSec: 30, idleSec: 30 };
export const QUICK: BenchOptions = { durationSec: 1, warmupSec: 0, handoffSamples: 10, burst: 100, listRows: [100, 500], listRuns: 10, idleSettleSec: 1, idleSec: 2 };
