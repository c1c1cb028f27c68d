import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A revision carries its deployment's listener (`listener_id` is immutable after create, so the
 * copy never goes stale), set by a trigger on insert whatever path writes the row. A listener
 * agent's poll finds its own rollouts in flight (`DEPLOYING`) and lost ones (`UNKNOWN`) through
 * `revisions_listener_work_idx`: it cost every rollout in flight in the installation before
 * (a poll joined them all to the listener's deployments; thousands on another listener made
 * each poll several times slower).
 */
export class RevisionListener1765000001000 implements MigrationInterface {
  name = 'RevisionListener1765000001000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE revisions ADD COLUMN listener_id uuid`);
    await q.query(`UPDATE revisions r SET listener_id = d.listener_id
                     FROM deployments d WHERE d.id = r.deployment_id AND d.listener_id IS NOT NULL`);
    await q.query(`
      CREATE FUNCTION revisions_listener_of_deployment() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        SELECT listener_id INTO NEW.listener_id FROM deployments WHERE id = NEW.deployment_id;
        RETURN NEW;
      END $$`);
    await q.query(`CREATE TRIGGER revisions_listener BEFORE INSERT ON revisions
                   FOR EACH ROW EXECUTE FUNCTION revisions_listener_of_deployment()`);
    await q.query(`CREATE INDEX revisions_listener_work_idx ON revisions (listener_id, status)
                   WHERE listener_id IS NOT NULL AND status IN ('DEPLOYING', 'UNKNOWN')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER revisions_listener ON revisions`);
    await q.query(`DROP FUNCTION revisions_listener_of_deployment()`);
    await q.query(`ALTER TABLE revisions DROP COLUMN listener_id`);
  }
}
