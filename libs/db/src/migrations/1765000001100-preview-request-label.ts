import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Whether the parent's approval label was on the pull request when its waiting head was recorded
 * (or at the latest label change since). Gitea's `label_updated` says only which labels the pull
 * request has now, not which one changed: a label left on from an earlier head must not approve a
 * newer one when some other label changes. The label approves a head only once it is added after
 * that head arrived (docs/api.md, Previews: remove and add it again).
 */
export class PreviewRequestLabel1765000001100 implements MigrationInterface {
  name = 'PreviewRequestLabel1765000001100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE preview_requests ADD COLUMN labeled boolean NOT NULL DEFAULT false`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE preview_requests DROP COLUMN labeled`);
  }
}
