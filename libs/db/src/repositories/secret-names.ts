import type { DataSource } from 'typeorm';
import { queryRows } from '../sql.js';
import { DeploymentRepository } from './deployment.repository.js';

const BATCH = 500;

/**
 * Fills `deployments.secret_names` (migration 1764800000100) for rows written before it: a
 * migration cannot open their sealed secrets, `slipway migrate` can (it holds the secrets key).
 * Batches of 500 rows, each its own short transaction; a row changed meanwhile (its names set by
 * the api) is left as the api wrote it. Returns how many rows it filled.
 */
export async function fillSecretNames(
  dataSource: DataSource,
  namesOf: (sealed: string, deploymentId: string) => string[],
): Promise<number> {
  let filled = 0;
  let after = '00000000-0000-0000-0000-000000000000';
  for (;;) {
    const rows = await queryRows<{ id: string; secrets_sealed: string }>(
      dataSource.manager,
      `SELECT id, secrets_sealed FROM deployments WHERE secret_names IS NULL AND secrets_sealed IS NOT NULL ` +
        `AND id > $1 ORDER BY id LIMIT ${BATCH}`,
      [after],
    );
    if (!rows.length) return filled;
    after = rows[rows.length - 1]!.id;
    await new DeploymentRepository(dataSource.manager).fillSecretNames(
      rows.map((r) => ({ id: r.id, sealed: r.secrets_sealed, names: namesOf(r.secrets_sealed, r.id) })),
    );
    filled += rows.length;
  }
}
