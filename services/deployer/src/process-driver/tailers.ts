import type { DataSource } from '@slipway/db';
import type { InstanceRecord } from '@slipway/runtime';
import { DeployLogTailer } from '../deploy-log-tailer.js';

/** One deploy-log tailer per live instance. */
export class Tailers {
  private readonly tailers = new Map<string, DeployLogTailer>();

  constructor(private readonly dataSource: DataSource) {}

  async ensure(row: InstanceRecord, secretValues: readonly string[]): Promise<void> {
    if (this.tailers.has(row.id)) return;
    const tailer = new DeployLogTailer(this.dataSource, row.revisionId, row.logPath, secretValues);
    this.tailers.set(row.id, tailer);
    await tailer.start();
  }

  async stop(instanceId: string): Promise<void> {
    const tailer = this.tailers.get(instanceId);
    this.tailers.delete(instanceId);
    await tailer?.stop();
  }

  async stopAll(): Promise<void> {
    const tailers = [...this.tailers.values()];
    this.tailers.clear();
    await Promise.allSettled(tailers.map((t) => t.stop()));
  }
}
