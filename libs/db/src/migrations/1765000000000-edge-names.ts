import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The edge (docs/operations.md, The edge): every deployment's name under the apps domain.
 *
 * - `deployments.edge_name`: the DNS label of the deployment at the edge, unique in the whole
 *   installation (deployment names are unique per workspace only). It is the deployment's name
 *   when no other deployment holds that label, else the name (cut to fit a 63-character label)
 *   with `-` and 6 random hex digits, which say nothing about the deployment holding the name.
 *   Chosen by a trigger, so every writer of `deployments` gets one in its own insert; the
 *   advisory lock on the label serializes two creates of one name in two workspaces (the second
 *   sees the first's label once it commits), and nothing else waits on it.
 * - NOTIFY `slipway_edge_routes` with the deployment id whenever its label or serving port
 *   changes, its delete starts or it is deleted: every edge replica updates its routing table without a restart.
 */
export class EdgeNames1765000000000 implements MigrationInterface {
  name = 'EdgeNames1765000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE deployments ADD COLUMN edge_name text CONSTRAINT deployments_edge_name_key UNIQUE`);
    await q.query(`
      CREATE FUNCTION slipway_edge_name() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        base text := lower(NEW.name);
      BEGIN
        IF NEW.edge_name IS NOT NULL THEN RETURN NEW; END IF;
        PERFORM pg_advisory_xact_lock(hashtext('slipway.edge_name'), hashtext(base));
        NEW.edge_name := base;
        WHILE EXISTS (SELECT 1 FROM deployments WHERE edge_name = NEW.edge_name AND id <> NEW.id) LOOP
          NEW.edge_name := rtrim(left(base, 56), '-') || '-' || substr(md5(random()::text || clock_timestamp()::text), 1, 6);
        END LOOP;
        RETURN NEW;
      END $$`);
    await q.query(
      `CREATE TRIGGER deployments_edge_name BEFORE INSERT ON deployments FOR EACH ROW EXECUTE FUNCTION slipway_edge_name()`,
    );
    // Existing deployments, oldest first: the first holder of a name keeps the plain label.
    await q.query(
      `
      DO $$
      DECLARE r record;
      BEGIN
        FOR r IN SELECT id, lower(name) AS base FROM deployments ORDER BY created_at, id LOOP
          UPDATE deployments SET edge_name = CASE
              WHEN EXISTS (SELECT 1 FROM deployments WHERE edge_name = r.base) THEN rtrim(left(r.base, 56), ` +
        `'-') || '-' || substr(md5(random()::text || r.id::text), 1, 6)
              ELSE r.base END
            WHERE id = r.id;
        END LOOP;
      END $$`,
    );
    await q.query(`
      CREATE FUNCTION slipway_edge_routes_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('slipway_edge_routes', coalesce(NEW.id, OLD.id)::text);
        RETURN NULL;
      END $$`);
    // Only what changes a route: NOTIFY serializes committing transactions, so no status change
    // other than the start of a delete sends one.
    await q.query(`
      CREATE TRIGGER deployments_edge_routes AFTER UPDATE OF edge_name, serving_port, status ON deployments
        FOR EACH ROW WHEN (OLD.edge_name IS DISTINCT FROM NEW.edge_name OR OLD.serving_port IS DISTINCT FROM NEW.serving_port
          OR (OLD.status = 'AWAITING_DELETE') <> (NEW.status = 'AWAITING_DELETE'))
        EXECUTE FUNCTION slipway_edge_routes_notify()`);
    await q.query(
      `CREATE TRIGGER deployments_edge_routes_gone AFTER DELETE ON deployments FOR EACH ROW EXECUTE FUNCTION slipway_edge_routes_notify()`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER deployments_edge_routes_gone ON deployments`);
    await q.query(`DROP TRIGGER deployments_edge_routes ON deployments`);
    await q.query(`DROP FUNCTION slipway_edge_routes_notify()`);
    await q.query(`DROP TRIGGER deployments_edge_name ON deployments`);
    await q.query(`DROP FUNCTION slipway_edge_name()`);
    await q.query(`ALTER TABLE deployments DROP COLUMN edge_name`);
  }
}
