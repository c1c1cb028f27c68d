import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What Slipway last told a pull request about its preview (docs/api.md, Previews): the commit
 * status and comment of the preview's latest revision in one of three states (pending, success,
 * failure). A worker reports each change once; a failure to reach the forge is kept here (and
 * tried again with backoff), never a failure of the preview. The row is also the lock that keeps
 * two workers from reporting one preview at once.
 */
export class PreviewFeedback1765000000500 implements MigrationInterface {
  name = 'PreviewFeedback1765000000500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE preview_feedback (
        deployment_id     uuid PRIMARY KEY REFERENCES deployments(id) ON DELETE CASCADE,
        reported_revision uuid,
        reported_state    text,
        attempts          integer NOT NULL DEFAULT 0,
        next_attempt_at   timestamptz NOT NULL DEFAULT now(),
        last_error        text,
        updated_at        timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(
      `CREATE INDEX deployments_forge_previews_idx ON deployments (id) WHERE preview_of IS NOT NULL AND preview ? 'repository'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX deployments_forge_previews_idx`);
    await q.query(`DROP TABLE preview_feedback`);
  }
}
