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

const rank = (file: TestSpecification): number => {
  const at = SLOW_FIRST.findIndex((pattern) => pattern.test(file.moduleId));
  return at < 0 ? SLOW_FIRST.length : at;
};

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    return sorted
      .map((file, index) => ({ file, index }))
      .sort((a, b) => rank(a.file) - rank(b.file) || a.index - b.index)
      .map(({ file }) => file);
  }
}
