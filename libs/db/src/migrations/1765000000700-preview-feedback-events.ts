import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A forge that refuses a preview's feedback (its commit status or comment) is said in the events
 * (docs/api.md, Events), and so reaches the console and the webhooks: one `preview.feedback_failed`
 * per failed attempt (at most five per state), with the state being told, the forge's error, the
 * attempt and whether that state is now given up. `failed_state` keeps the state a failure was
 * about beside the error.
 */
export class PreviewFeedbackEvents1765000000700 implements MigrationInterface {
  name = 'PreviewFeedbackEvents1765000000700';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE preview_feedback ADD COLUMN failed_state text`);
    await q.query(
      `
      CREATE FUNCTION slipway_preview_feedback_event() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO events (workspace_id, type, deployment_id, data)
          SELECT d.workspace_id, 'preview.feedback_failed', d.id,
                 jsonb_build_object('name', d.name, 'parent_id', d.preview_of, 'number', d.preview->'pull_request'->'number',
                                    'state', NEW.failed_state, 'error', NEW.last_error, 'attempt', NEW.attempts,
                                    'given_up', NEW.reported_state IS DISTINCT FROM OLD.reported_state ` +
        `OR NEW.reported_revision IS DISTINCT FROM OLD.reported_revision)
            FROM deployments d WHERE d.id = NEW.deployment_id;
        RETURN NULL;
      END $$`,
    );
    await q.query(`
      CREATE TRIGGER preview_feedback_failed AFTER UPDATE OF attempts ON preview_feedback
        FOR EACH ROW WHEN (NEW.attempts > OLD.attempts AND NEW.last_error IS NOT NULL)
        EXECUTE FUNCTION slipway_preview_feedback_event()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER preview_feedback_failed ON preview_feedback`);
    await q.query(`DROP FUNCTION slipway_preview_feedback_event()`);
    await q.query(`ALTER TABLE preview_feedback DROP COLUMN failed_state`);
  }
}
