import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Events (docs/api.md, Events): every deployment and revision creation, status change and
 * deployment deletion, written by triggers in the transaction that made the change, so no code
 * path can forget one. An event's public `id` is given at commit, under a per-workspace lock,
 * so ids grow in commit order within a workspace: a follower reading `id > last seen` never
 * misses an event that committed late with a smaller id. Each numbered event is announced on
 * the `slipway_events` channel with its workspace id.
 */
export class Events1764500000001 implements MigrationInterface {
  name = 'Events1764500000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE SEQUENCE events_id_seq`);
    await q.query(`
      CREATE TABLE events (
        uid           bigserial PRIMARY KEY,
        id            bigint UNIQUE,
        workspace_id  uuid NOT NULL,
        type          text NOT NULL,
        deployment_id uuid,
        revision_id   uuid,
        data          jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at    timestamptz NOT NULL DEFAULT clock_timestamp()
      )`);
    await q.query(`CREATE INDEX events_workspace_idx ON events (workspace_id, id) WHERE id IS NOT NULL`);

    await q.query(`
      CREATE FUNCTION slipway_event_number() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('slipway_events'), hashtext(NEW.workspace_id::text));
        UPDATE events SET id = nextval('events_id_seq') WHERE uid = NEW.uid;
        PERFORM pg_notify('slipway_events', NEW.workspace_id::text);
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE CONSTRAINT TRIGGER events_number AFTER INSERT ON events
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slipway_event_number()`);

    await q.query(`
      CREATE FUNCTION slipway_deployment_event() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO events (workspace_id, type, deployment_id, data)
          VALUES (NEW.workspace_id, 'deployment.created', NEW.id, jsonb_build_object('name', NEW.name, 'status', NEW.status));
        ELSIF TG_OP = 'UPDATE' THEN
          INSERT INTO events (workspace_id, type, deployment_id, data)
          VALUES (NEW.workspace_id, 'deployment.status_changed', NEW.id, jsonb_build_object('from', OLD.status, 'to', NEW.status));
        ELSE
          INSERT INTO events (workspace_id, type, deployment_id, data)
          VALUES (OLD.workspace_id, 'deployment.deleted', OLD.id, jsonb_build_object('name', OLD.name));
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(
      `CREATE TRIGGER deployments_created_event AFTER INSERT ON deployments FOR EACH ROW EXECUTE FUNCTION slipway_deployment_event()`,
    );
    await q.query(`
      CREATE TRIGGER deployments_status_event AFTER UPDATE OF status ON deployments
        FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION slipway_deployment_event()`);
    await q.query(
      `CREATE TRIGGER deployments_deleted_event AFTER DELETE ON deployments FOR EACH ROW EXECUTE FUNCTION slipway_deployment_event()`,
    );

    await q.query(
      `
      CREATE FUNCTION slipway_revision_event() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE ws uuid;
      BEGIN
        SELECT workspace_id INTO ws FROM deployments WHERE id = NEW.deployment_id;
        IF ws IS NULL THEN RETURN NULL; END IF;
        IF TG_OP = 'INSERT' THEN
          INSERT INTO events (workspace_id, type, deployment_id, revision_id, data)
          VALUES (ws, 'revision.created', NEW.deployment_id, NEW.id, jsonb_build_object('status', NEW.status, ` +
        `'redeployed_from', NEW.redeployed_from));
        ELSE
          INSERT INTO events (workspace_id, type, deployment_id, revision_id, data)
          VALUES (ws, 'revision.status_changed', NEW.deployment_id, NEW.id,
                  jsonb_build_object('from', OLD.status, 'to', NEW.status, 'status_message', NEW.status_message));
        END IF;
        RETURN NULL;
      END $$`,
    );
    await q.query(
      `CREATE TRIGGER revisions_created_event AFTER INSERT ON revisions FOR EACH ROW EXECUTE FUNCTION slipway_revision_event()`,
    );
    await q.query(`
      CREATE TRIGGER revisions_status_event AFTER UPDATE OF status ON revisions
        FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION slipway_revision_event()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER revisions_status_event ON revisions`);
    await q.query(`DROP TRIGGER revisions_created_event ON revisions`);
    await q.query(`DROP FUNCTION slipway_revision_event()`);
    await q.query(`DROP TRIGGER deployments_deleted_event ON deployments`);
    await q.query(`DROP TRIGGER deployments_status_event ON deployments`);
    await q.query(`DROP TRIGGER deployments_created_event ON deployments`);
    await q.query(`DROP FUNCTION slipway_deployment_event()`);
    await q.query(`DROP TABLE events`);
    await q.query(`DROP FUNCTION slipway_event_number()`);
    await q.query(`DROP SEQUENCE events_id_seq`);
  }
}
