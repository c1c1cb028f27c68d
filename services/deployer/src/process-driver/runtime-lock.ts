import { ping, releaseSessionLock, trySessionLock, type DataSource } from '@slipway/db';
import type { Logger } from '@slipway/logging';

/**
 * The advisory lock (two-key form: 'slip' and 1) that makes one deployer the owner of this
 * installation's local processes. Nothing else of Slipway uses advisory locks with this key.
 */
const RUNTIME_LOCK = [0x736c6970, 1] as const;

/**
 * SINGLE NODE: local processes live on one machine, so exactly one deployer may own them. The
 * owner is whoever holds a Postgres advisory lock (session-level, on a connection kept for the
 * purpose). The lock frees itself when that deployer dies, and a standby takes it on its next try.
 */
export class RuntimeLock {
  private runner: ReturnType<DataSource['createQueryRunner']> | null = null;

  constructor(
    private readonly dataSource: DataSource,
    private readonly log: Logger,
    /** Runs each time this deployer takes the lock (before it serves): announcing where it is. */
    private readonly onTaken: () => Promise<void> = async () => undefined,
  ) {}

  get held(): boolean {
    return this.runner !== null;
  }

  /**
   * Keeps (or takes) the lock; true while held. `onLost` runs when the lock connection broke
   * (another deployer may own the processes now).
   */
  async hold(onLost: () => Promise<void>): Promise<boolean> {
    if (this.runner) {
      try {
        await ping(this.runner);
        return true;
      } catch (err) {
        this.log.error({ err }, 'lost the runtime lock connection; no longer serving local processes');
        await onLost();
        await this.release();
      }
    }
    const runner = this.dataSource.createQueryRunner();
    try {
      await runner.connect();
      if (await trySessionLock(runner, RUNTIME_LOCK)) {
        this.runner = runner;
        this.log.info('runtime lock held: this deployer runs the local processes');
        await this.onTaken().catch((err) =>
          this.log.error(
            { err },
            'could not announce this deployer as the runtime owner (edges keep the address they had)',
          ),
        );
        return true;
      }
    } catch (err) {
      this.log.warn({ err }, 'could not try the runtime lock');
    }
    await runner.release().catch(() => undefined);
    return false;
  }

  async release(): Promise<void> {
    const runner = this.runner;
    this.runner = null;
    if (!runner) return;
    await releaseSessionLock(runner, RUNTIME_LOCK).catch(() => undefined);
    await runner.release().catch(() => undefined);
  }
}
