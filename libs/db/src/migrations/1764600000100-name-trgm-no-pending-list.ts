import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The `name_contains` trigram index without GIN's pending list (bench/README.md, list). With
 * `fastupdate` on (the default), inserted names go to an unsorted pending list of up to
 * `gin_pending_list_limit` (4 MB) that every search reads in full until a vacuum merges it: a
 * rare `name_contains` read 495 index pages at 100k deployments instead of 9. Off, each insert
 * updates the index directly, and a search reads only its trigrams' entries. The list already
 * pending is merged here.
 */
export class NameTrgmNoPendingList1764600000100 implements MigrationInterface {
  name = 'NameTrgmNoPendingList1764600000100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER INDEX deployments_name_trgm_idx SET (fastupdate = off)`);
    await q.query(`SELECT gin_clean_pending_list('deployments_name_trgm_idx'::regclass)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER INDEX deployments_name_trgm_idx RESET (fastupdate)`);
  }
}
