import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Pull requests from forks waiting for an admin's approval before their preview builds
 * (docs/api.md, Previews): fork code never builds on its own. One row per parent and pull
 * request, replaced by each new head (an approval is for one head commit), removed once
 * approved or when the pull request closes.
 */
export class PreviewRequests1765000000600 implements MigrationInterface {
  name = 'PreviewRequests1765000000600';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE preview_requests (
        parent_id       uuid NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
        number          integer NOT NULL,
        head_ref        text NOT NULL,
        head_sha        text NOT NULL,
        url             text,
        repository      text,
        fork_repository text,
        received_at     timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (parent_id, number)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE preview_requests`);
  }
}
