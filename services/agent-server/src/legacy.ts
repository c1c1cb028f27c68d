// Earlier hosts kept every assistant, thread and run as one serialised record in
// `slipway_agent_records` (re-read whole whenever another instance wrote). This moves those
// records into the row tables once, in one transaction, and drops the old tables. Runs that were
// `running` belonged to an instance of the old host that is gone or going: they end `error` (their
// thread usable again) instead of holding their thread forever.
import type { PoolClient } from 'pg';
import { json } from './rows.js';

type Deserialize = (text: string) => Promise<any>;

export async function migrateLegacyRecords(client: PoolClient, deserialize: Deserialize): Promise<number> {
  const { rows: exists } = await client.query(`SELECT to_regclass('slipway_agent_records') IS NOT NULL AS present`);
  if (!exists[0].present) return 0;
  await client.query('BEGIN');
  try {
    const { rows } = await client.query<{ kind: string; data: string }>(
      `SELECT kind, data FROM slipway_agent_records ORDER BY CASE kind WHEN 'assistants' THEN 0 ` +
        `WHEN 'assistant_versions' THEN 1 WHEN 'threads' THEN 2 ELSE 3 END`,
    );
    let moved = 0;
    for (const row of rows) {
      const r = await deserialize(row.data);
      if (row.kind === 'assistants') {
        await client.query(
          `INSERT INTO slipway_agent_assistants (assistant_id, graph_id, name, description, config, context, ` +
            `metadata, version, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
          [
            r.assistant_id,
            r.graph_id,
            r.name ?? r.graph_id,
            r.description ?? null,
            json(r.config ?? {}),
            json(r.context ?? null),
            json(r.metadata ?? {}),
            r.version ?? 1,
            r.created_at,
            r.updated_at,
          ],
        );
      } else if (row.kind === 'assistant_versions') {
        await client.query(
          `INSERT INTO slipway_agent_assistant_versions (assistant_id, version, graph_id, name, description, ` +
            `config, context, metadata, created_at)
           SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 WHERE EXISTS (SELECT 1 FROM slipway_agent_assistants WHERE assistant_id = $1)
           ON CONFLICT DO NOTHING`,
          [
            r.assistant_id,
            r.version,
            r.graph_id,
            r.name ?? r.graph_id,
            r.description ?? null,
            json(r.config ?? {}),
            json(r.context ?? null),
            json(r.metadata ?? {}),
            r.created_at,
          ],
        );
      } else if (row.kind === 'threads') {
        await client.query(
          `INSERT INTO slipway_agent_threads (thread_id, status, metadata, config, "values", interrupts, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
          [
            r.thread_id,
            r.status === 'busy' ? 'idle' : r.status,
            json(r.metadata ?? {}),
            json(r.config ?? {}),
            json(r.values ?? null),
            json(r.interrupts ?? null),
            r.created_at,
            r.updated_at,
          ],
        );
      } else if (row.kind === 'runs') {
        await client.query(
          `INSERT INTO slipway_agent_runs (run_id, thread_id, assistant_id, status, metadata, kwargs, ` +
            `multitask_strategy, created_at, updated_at)
           SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 WHERE EXISTS (SELECT 1 FROM slipway_agent_threads WHERE thread_id = $2)
           ON CONFLICT DO NOTHING`,
          [
            r.run_id,
            r.thread_id,
            r.assistant_id,
            r.status === 'running' ? 'error' : r.status,
            json(r.metadata ?? {}),
            json(r.kwargs ?? {}),
            r.multitask_strategy ?? 'reject',
            r.created_at,
            r.updated_at,
          ],
        );
      } else continue;
      moved++;
    }
    // A thread with a pending run is busy again.
    await client.query(`UPDATE slipway_agent_threads t SET status = 'busy'
                         WHERE EXISTS (SELECT 1 FROM slipway_agent_runs r WHERE r.thread_id = t.thread_id AND r.status = 'pending')`);
    await client.query('DROP TABLE slipway_agent_records; DROP TABLE IF EXISTS slipway_agent_records_version');
    await client.query('COMMIT');
    return moved;
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  }
}
