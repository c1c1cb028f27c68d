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
  /** Streamed runs timed to their first byte, each way (serving scenario). */
  streamRuns: number;
  /**
   * Time the project done by hand (`npm ci` + start) as the first deploy's baseline. Its two cold
   * installs are minutes of downloads; the smoke run leaves them out (that row has no target).
   */
  byHand: boolean;
  /** Threads (each with a run) the agent server's `GET /threads/{id}` is timed at (small, large). */
  agentRecords: [number, number];
  /** Timed `GET /threads/{id}` per size. */
  agentReads: number;
  /**
   * runs.wait calls per server instead of `durationSec` (quick: a wait takes longer than its
   * second, as a worker polls the queue), none for a timed load.
   */
  agentWaits?: number;
  /** Runs of the small and the large project the trace lists are timed on (tracing scenario). */
  tracingRuns: [number, number];
  /** Timed calls per trace-list query and size. */
  tracingListRuns: number;
}

export const FULL: BenchOptions = {
  durationSec: 10,
  warmupSec: 3,
  handoffSamples: 300,
  burst: 10_000,
  listRows: [1_000, 100_000],
  listRuns: 1_000,
  idleSettleSec: 30,
  idleSec: 30,
  streamRuns: 100,
  byHand: true,
  agentRecords: [2_000, 20_000],
  agentReads: 1_000,
  tracingRuns: [10_000, 1_000_000],
  tracingListRuns: 300,
};
export const QUICK: BenchOptions = {
  durationSec: 1,
  warmupSec: 0,
  handoffSamples: 10,
  burst: 100,
  listRows: [100, 500],
  listRuns: 10,
  idleSettleSec: 1,
  idleSec: 2,
  streamRuns: 5,
  byHand: false,
  agentRecords: [200, 2_000],
  agentReads: 20,
  agentWaits: 30,
  tracingRuns: [1_000, 20_000],
  tracingListRuns: 50,
};
