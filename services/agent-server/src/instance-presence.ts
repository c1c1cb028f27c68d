import type { Db } from './db.js';

/**
 * This instance's row in `slipway_agent_instances`: the code it runs and whether it drains, seen
 * by claims (a run made through code still served waits for an instance of that code). Only an
 * instance that claims runs is announced: runs never wait for an API-only one.
 */
export class InstancePresence {
  constructor(
    private readonly db: Db,
    private readonly options: { instanceId: string; code: string; claims: boolean },
  ) {}

  /** Instances gone for an hour (killed, not stopped) left their row: it goes. */
  async pruneGone(): Promise<void> {
    await this.db.query(`DELETE FROM slipway_agent_instances WHERE seen_at < now() - interval '1 hour'`);
  }

  /** Says this instance (and its code) is alive, or draining. */
  async announce(draining: boolean): Promise<void> {
    if (!this.options.claims) return;
    await this.db.query(
      `INSERT INTO slipway_agent_instances (instance_id, code, draining) VALUES ($1, $2, $3)
       ON CONFLICT (instance_id) DO UPDATE SET seen_at = now(), draining = EXCLUDED.draining`,
      [this.options.instanceId, this.options.code, draining],
    );
  }

  /** The instance has stopped claiming for good (drained): its row goes. */
  async leave(): Promise<void> {
    await this.db.query('DELETE FROM slipway_agent_instances WHERE instance_id = $1', [this.options.instanceId]);
  }
}
