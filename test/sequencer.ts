import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Files that take minutes start first: the bench's smoke run, then the e2e, browser and infra
 * files (real pipelines deploying real projects, a browser, builds). With two workers, a long
 * file started last runs alone while the other worker idles. On a fresh clone (CI) vitest has no
 * timings yet and orders files by size, which left the smoke run, a small file of three
 * minutes, for the very end. Within each group, vitest's own order (longest first once it has
 * timings).
 */
const SLOW_FIRST = [/\/test\/infra\/bench-smoke\.test\.ts$/, /\/test\/e2e\//, /\/test\/browser\//, /\/test\/infra\//];

/**
 * Long files that mostly wait (cron ticks, TTL sweeps, leases lapsing, runs outlasting a
 * redeploy, phase deadlines) rather than compute. Two of them side by side left both cores
 * half idle for minutes (CI's CPU fell to 46 % while the agent-server files ran together), so
 * each is placed after a file that computes (builds, browsers), and the two workers mostly hold
 * one of each.
 */
const MOSTLY_WAITING = [
  /\/test\/e2e\/agent-server-crons\.test\.ts$/,
  /\/test\/e2e\/agent-server-instances\.test\.ts$/,
  /\/test\/e2e\/agent-server-queue-workers\.test\.ts$/,
  /\/test\/e2e\/agent-server-multitask\.test\.ts$/,
  /\/test\/e2e\/agent-server-metrics\.test\.ts$/,
  /\/test\/e2e\/failures\.test\.ts$/,
];

const rank = (file: TestSpecification): number => {
  const at = SLOW_FIRST.findIndex((pattern) => pattern.test(file.moduleId));
  return at < 0 ? SLOW_FIRST.length : at;
};
const waits = (file: TestSpecification): boolean => MOSTLY_WAITING.some((pattern) => pattern.test(file.moduleId));

/** The mostly-waiting files, each after one that computes; the rest keep their order. */
export function interleave<T>(files: T[], mostlyWaiting: (file: T) => boolean): T[] {
  const waiting = files.filter(mostlyWaiting);
  const computing = files.filter((f) => !mostlyWaiting(f));
  const out: T[] = [];
  for (const file of computing) {
    out.push(file);
    const next = waiting.shift();
    if (next !== undefined) out.push(next);
  }
  return [...out, ...waiting];
}

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const ranked = sorted
      .map((file, index) => ({ file, index }))
      .sort((a, b) => rank(a.file) - rank(b.file) || a.index - b.index)
      .map(({ file }) => file);
    return interleave(ranked, waits);
  }
}
