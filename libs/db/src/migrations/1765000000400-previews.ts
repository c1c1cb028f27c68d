import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Preview deployments (docs/api.md, Previews): a deployment of its own per pull request of a
 * parent that turned previews on.
 *
 * - `deployments.preview_of`: the parent; `preview`: `{pull_request: {number, head_ref, head_sha,
 *   url}}`; `preview_expires_at`: when the reconciler tears it down (each rollout extends it);
 *   `preview_end_reason`: why its delete started (`closed`, `expired`, `parent_deleted`,
 *   `max_active`, `api`), for the event. One preview per parent and pull request number.
 * - Events `preview.created` (data `name`, `parent_id`, `number`) and `preview.deleted` (`name`,
 *   `parent_id`, `number`, `reason`), written by a trigger like every other event.
 */
export class Previews1765000000400 implements MigrationInterface {
  name = 'Previews1765000000400';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE deployments
        ADD COLUMN preview_of uuid REFERENCES deployments(id) ON DELETE SET NULL,
        ADD COLUMN preview jsonb,
        ADD COLUMN preview_expires_at timestamptz,
        ADD COLUMN preview_end_reason text`);
    await q.query(
      `CREATE UNIQUE INDEX deployments_preview_number_key ON deployments (preview_of, ` +
        `((preview->'pull_request'->>'number')::int)) WHERE preview_of IS NOT NULL`,
    );
    await q.query(
      `CREATE INDEX deployments_preview_expiry_idx ON deployments (preview_expires_at) ` +
        `WHERE preview_of IS NOT NULL AND status <> 'AWAITING_DELETE'`,
    );
    await q.query(`
      CREATE FUNCTION slipway_preview_event() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF OLD.preview_of IS NULL AND NEW.preview_of IS NOT NULL THEN
          INSERT INTO events (workspace_id, type, deployment_id, data)
            VALUES (NEW.workspace_id, 'preview.created', NEW.id,
                    jsonb_build_object('name', NEW.name, 'parent_id', NEW.preview_of, 'number', NEW.preview->'pull_request'->'number'));
        ELSIF NEW.preview_of IS NOT NULL AND NEW.status = 'AWAITING_DELETE' AND OLD.status <> 'AWAITING_DELETE' THEN
          INSERT INTO events (workspace_id, type, deployment_id, data)
            VALUES (NEW.workspace_id, 'preview.deleted', NEW.id,
                    jsonb_build_object('name', NEW.name, 'parent_id', NEW.preview_of, 'number', NEW.preview->'pull_request'->'number',
                                       'reason', coalesce(NEW.preview_end_reason, 'api')));
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(
      `CREATE TRIGGER deployments_preview_events AFTER UPDATE OF preview_of, status ON deployments ` +
        `FOR EACH ROW EXECUTE FUNCTION slipway_preview_event()`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER deployments_preview_events ON deployments`);
    await q.query(`DROP FUNCTION slipway_preview_event()`);
    await q.query(`DROP INDEX deployments_preview_expiry_idx`);
    await q.query(`DROP INDEX deployments_preview_number_key`);
    await q.query(
      `ALTER TABLE deployments DROP COLUMN preview_end_reason, DROP COLUMN preview_expires_at, DROP COLUMN preview, DROP COLUMN preview_of`,
    );
  }
}
