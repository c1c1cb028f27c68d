/**
 * The build's disk quota (SLIPWAY_BUILD_DISK_MB) over its build directory and the deployment's
 * npm cache: watched while a step runs, checked after it, and reported as the BuildError users
 * read.
 */
import { rm } from 'node:fs/promises';
import { BuildError, type BuildPaths } from './build-steps.js';
import { DiskQuota, DiskQuotaExceeded, diskUsage, mb } from './disk-quota.js';

export class BuildQuota {
  private readonly quota: DiskQuota;

  constructor(
    private readonly paths: BuildPaths,
    limitMb: number,
    /** The build's own cancellation (its phase guard): an abort for that is not a quota overrun. */
    private readonly cancelled: AbortSignal,
  ) {
    // Everything a step can write to: its build directory and the deployment's npm cache.
    this.quota = new DiskQuota([paths.work, paths.npmCache], limitMb * 1024 * 1024);
  }

  /**
   * Runs `work` (a step, `what` names it for messages) with a signal that also aborts when the
   * build passes its disk quota, then checks the quota once more: a step that wrote faster
   * than the watch measures still fails the build.
   */
  async within(what: string, work: (signal: AbortSignal) => Promise<void>): Promise<void> {
    const watch = this.quota.watch();
    try {
      await work(AbortSignal.any([this.cancelled, watch.signal]));
    } catch (err) {
      throw this.error(err, watch.signal, `while ${what} ran`);
    } finally {
      watch.stop();
    }
    await this.check(`after ${what}`);
  }

  async check(when: string): Promise<void> {
    try {
      await this.quota.check();
    } catch (err) {
      throw this.error(err, null, when);
    }
  }

  /**
   * The deployment's npm cache counts against the quota of each of its builds; past half of it
   * the cache is emptied first, so it cannot grow build after build until every build fails.
   * Returns what to tell the build log, if anything was emptied.
   */
  async trimNpmCache(): Promise<string | null> {
    const used = await diskUsage([this.paths.npmCache]);
    if (used <= this.quota.limitBytes / 2) return null;
    await rm(this.paths.npmCache, { recursive: true, force: true });
    return `The deployment's npm cache held ${mb(used)} MB, more than half the build disk quota: emptied it.`;
  }

  /** A quota overrun (by the watch's abort, or a check) as the BuildError users read; anything else as it was. */
  private error(err: unknown, watched: AbortSignal | null, when: string): unknown {
    const exceeded =
      err instanceof DiskQuotaExceeded
        ? err
        : watched?.aborted && !this.cancelled.aborted
          ? (watched.reason as DiskQuotaExceeded)
          : null;
    if (!exceeded) return err;
    return new BuildError(
      `The build exceeded its disk quota of ${mb(exceeded.limitBytes)} MB (SLIPWAY_BUILD_DISK_MB): ` +
        `its build directory and npm cache held ${mb(exceeded.usedBytes)} MB ${when}.`,
    );
  }
}
