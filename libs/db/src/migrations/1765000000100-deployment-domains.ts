import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Custom domains of deployments (docs/api.md, Domains):
 *
 * - `deployment_domains`: each host a deployment answers at besides its name under the apps
 *   domain, unique in the whole installation (lower case, no port). `state` is
 *   `pending_verification` until the workspace proved it controls the host (a TXT record with
 *   `verification_token`, or verification turned off), then `issuing` while the edge obtains its
 *   certificate, `active` once it is served, `failed` (with `error`) when issuance failed. Only
 *   verified hosts are routed. `from_custom_url`: the row stands for `source_config.custom_url`.
 * - Every change of a host's route (claimed, verified, released) is announced on
 *   `slipway_edge_routes` with the deployment id, as its name's changes are.
 * - `domain.state_changed` events (data `host`, `from`, `to`, `error`) are written by a trigger in
 *   the transaction of the change, as every other event is.
 */
export class DeploymentDomains1765000000100 implements MigrationInterface {
  name = 'DeploymentDomains1765000000100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE deployment_domains (
        id                 uuid PRIMARY KEY,
        deployment_id      uuid NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
        workspace_id       uuid NOT NULL,
        host               text NOT NULL CONSTRAINT deployment_domains_host_key UNIQUE,
        state              text NOT NULL CHECK (state IN ('pending_verification', 'issuing', 'active', 'failed')),
        error              text,
        verification_token text NOT NULL,
        verified_at        timestamptz,
        from_custom_url    boolean NOT NULL DEFAULT false,
        checked_at         timestamptz,
        created_at         timestamptz NOT NULL DEFAULT now(),
        updated_at         timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX deployment_domains_deployment_idx ON deployment_domains (deployment_id)`);
    await q.query(
      `CREATE INDEX deployment_domains_pending_idx ON deployment_domains (checked_at NULLS FIRST) WHERE verified_at IS NULL`,
    );
    await q.query(`
      CREATE FUNCTION slipway_domain_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'UPDATE' AND OLD.state IS DISTINCT FROM NEW.state THEN
          INSERT INTO events (workspace_id, type, deployment_id, data)
            VALUES (NEW.workspace_id, 'domain.state_changed', NEW.deployment_id,
                    jsonb_build_object('host', NEW.host, 'from', OLD.state, 'to', NEW.state, 'error', NEW.error));
        END IF;
        IF TG_OP <> 'UPDATE' OR OLD.verified_at IS DISTINCT FROM NEW.verified_at THEN
          PERFORM pg_notify('slipway_edge_routes', coalesce(NEW.deployment_id, OLD.deployment_id)::text);
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(
      `CREATE TRIGGER deployment_domains_changed AFTER INSERT OR UPDATE OR DELETE ON deployment_domains ` +
        `FOR EACH ROW EXECUTE FUNCTION slipway_domain_changed()`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE deployment_domains`);
    await q.query(`DROP FUNCTION slipway_domain_changed()`);
  }
}
