import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What an image's layers unpack to on the deployer's disk, on its manifest's row of
 * `registry_blobs` (null until a deployer pulls it): the `registry_bytes` quota counts these bytes
 * besides the compressed ones the registry stores, so a small push that inflates hugely (a
 * decompression bomb) uses up the quota it really costs. On the manifest's row, so garbage
 * collection forgetting the manifest forgets its unpacked bytes too.
 */
export class ImageUnpackedBytes1764800000650 implements MigrationInterface {
  name = 'ImageUnpackedBytes1764800000650';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE registry_blobs ADD COLUMN unpacked_bytes bigint CHECK (unpacked_bytes >= 0)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE registry_blobs DROP COLUMN unpacked_bytes`);
  }
}
