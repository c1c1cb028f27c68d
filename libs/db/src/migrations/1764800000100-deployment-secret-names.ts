import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The names of a deployment's secrets beside their sealed values, as revisions have them: a GET
 * or a list shows names only (values masked), and opened every box to find them (a list page of
 * 20 deployments opened 20). NULL: not recorded yet (rows written before this migration); the
 * api then opens the box, and `slipway migrate` fills them right after migrating (it holds the
 * secrets key, which a migration does not: libs/db/src/repositories/secret-names.ts).
 */
export class DeploymentSecretNames1764800000100 implements MigrationInterface {
  name = 'DeploymentSecretNames1764800000100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE deployments ADD COLUMN secret_names text[]`);
    // Without secrets there is nothing to open: those are known now.
    await q.query(`UPDATE deployments SET secret_names = '{}' WHERE secrets_sealed IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE deployments DROP COLUMN secret_names`);
  }
}
