import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every statement that inserts into the outbox notifies `slipway_outbox` (OUTBOX_CHANNEL of
 * @slipway/jobs), so relays wake at once instead of at their next poll: delivered on commit,
 * dropped on rollback, one per transaction however many statements inserted. A trigger, not a
 * `pg_notify` in the inserting statement, so the insert can be a data-modifying CTE of another
 * statement (a revision's insert carries its jobs) and still notify.
 */
export class OutboxNotify1764800000500 implements MigrationInterface {
  name = 'OutboxNotify1764800000500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE FUNCTION slipway_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('slipway_outbox', '');
        RETURN NULL;
      END $$`);
    await q.query(
      `CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION slipway_outbox_notify()`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER outbox_notify ON outbox`);
    await q.query(`DROP FUNCTION slipway_outbox_notify()`);
  }
}
