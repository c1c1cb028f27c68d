import type { DataSource } from '@slipway/db';
import type { InstanceRecord } from '@slipway/runtime';
import { DeployLogTailer } from '../deploy-log-tailer.js';

/** One deploy-log tailer per live instance. */
export class Tailers {
  private readonly tailers = new Map<string, DeployLogTailer>();

  constructor(
    private readonly dataSource: DataSource,
    /** Each instance's log file is rotated past this many bytes (DeployLogTailer). */
    private readonly rotateBytes: number,
  ) {}

  async ensure(row: InstanceRecord, secretValues: readonly string[]): Promise<void> {
    if (this.tailers.has(row.id)) return;
    const tailer = new DeployLogTailer(
      this.dataSource,
      row.revisionId,
      row.logPath,
      secretValues,
      this.rotateBytes,
      row.index,
    );
    this.tailers.set(row.id, tailer);
    await tailer.start();
  }

  async stop(instanceId: string): Promise<void> {
    const tailer = this.tailers.get(instanceId);
    this.tailers.delete(instanceId);
    await tailer?.stop();
  }

  /**
   * Stops following a stopped instance and removes its log files: its output is in the deploy
   * log, and a deployment's runtime dir then holds only its live instances' (capped) files.
   */
  async discard(row: InstanceRecord): Promise<void> {
    await this.stop(row.id);
    await DeployLogTailer.remove(row.logPath);
  }

  async stopAll(): Promise<void> {
    const tailers = [...this.tailers.values()];
    this.tailers.clear();
    await Promise.allSettled(tailers.map((t) => t.stop()));
  }
}
