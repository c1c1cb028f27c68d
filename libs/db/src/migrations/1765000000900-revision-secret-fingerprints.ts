import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each revision's keyed fingerprints of its secrets' values, by name (docs/api.md, Revisions), so
 * a client can tell which values a rollback changes without any value leaving the box. Revisions
 * made before keep NULL: their values were never fingerprinted, and the api says so ("unknown")
 * rather than guess.
 */
export class RevisionSecretFingerprints1765000000900 implements MigrationInterface {
  name = 'RevisionSecretFingerprints1765000000900';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE revisions ADD COLUMN secret_fingerprints jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE revisions DROP COLUMN secret_fingerprints`);
  }
}
