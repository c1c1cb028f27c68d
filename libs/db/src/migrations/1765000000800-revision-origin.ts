import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why each revision exists and who made it (docs/api.md, Revisions): `trigger` (create, patch,
 * push, upload, image_push, redeploy, preview, api_revision) and `created_by` ({kind, id, name}).
 * Revisions made before keep both null.
 */
export class RevisionOrigin1765000000800 implements MigrationInterface {
  name = 'RevisionOrigin1765000000800';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE revisions ADD COLUMN trigger text, ADD COLUMN created_by jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE revisions DROP COLUMN trigger, DROP COLUMN created_by`);
  }
}
