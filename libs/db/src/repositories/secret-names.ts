import type { DataSource } from 'typeorm';
import { queryRows } from '../sql.js';

const BATCH = 500;

/**
 * Fills `deployments.secret_names` (migration 1764800000100) for rows written before it: a
 * migration cannot open their sealed secrets, `slipway migrate` can (it holds the secrets key).
 * Batches of 500 rows, each its own short transaction; a row changed meanwhile (its names set by
 * the api) is left as the api wrote it. Returns how many rows it filled.
 */
export async function fillSecretNames(dataSource: DataSource, namesOf: (sealed: string, deploymentId: string) => string[]): Promise<number> {
  let filled = 0;
  let after = '00000000-0000-0000-0000-000000000000';
  for (;;) {
    const rows = await queryRows<{ id: string; secrets_sealed: string }>(
      dataSource.manager,
      `SELECT id, secrets_sealed FROM deployments WHERE secret_names IS NULL AND secrets_sealed IS NOT NULL AND id > $1 ORDER BY id LIMIT ${BATCH}`,
      [after],
    );
    if (!rows.length) return filled;
    after = rows[rows.length - 1]!.id;
    const names = rows.map((r) => JSON.stringify(namesOf(r.secrets_sealed, r.id)));
    await dataSource.query(
      `UPDATE deployments d SET secret_names = ARRAY(SELECT jsonb_array_elements_text(v.names))
         FROM unnest($1::uuid[], $2::text[], $3::jsonb[]) AS v(id, sealed, names)
        WHERE d.id = v.id AND d.secret_names IS NULL AND d.secrets_sealed = v.sealed`,
      [rows.map((r) => r.id), rows.map((r) => r.secrets_sealed), names],
    );
    filled += rows.length;
  }
}
