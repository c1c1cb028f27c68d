import type { EntityManager } from 'typeorm';
import { queryRows } from '../sql.js';

/** The channel on which a deployment's id is sent when its edge route changes (migration 1765000000000-edge-names). */
export const EDGE_ROUTES_CHANNEL = 'slipway_edge_routes';

/** Where the edge sends a name's requests: the deployment's serving proxy, once it has one. */
export interface EdgeRoute {
  deploymentId: string;
  /** The DNS label under the apps domain. */
  edgeName: string;
  /** Its serving proxy's port on the runtime host; null until its first rollout opened it. */
  servingPort: number | null;
  /** Its verified custom domains (lower case). */
  hosts: string[];
}

interface Row {
  id: string;
  edge_name: string;
  serving_port: number | null;
  hosts: string[];
}

const toRoute = (r: Row): EdgeRoute => ({
  deploymentId: r.id,
  edgeName: r.edge_name,
  servingPort: r.serving_port,
  hosts: r.hosts,
});

const SELECT = `SELECT d.id, d.edge_name, d.serving_port,
       ARRAY(SELECT x.host FROM deployment_domains x WHERE x.deployment_id = d.id AND x.verified_at IS NOT NULL ORDER BY x.host) AS hosts
  FROM deployments d
 WHERE d.listener_id IS NULL AND d.edge_name IS NOT NULL AND d.status <> 'AWAITING_DELETE'`;

/**
 * The edge's reads (docs/operations.md, The edge): the deployments this machine's process
 * runtime serves (no listener) that are not being deleted, by name and verified custom domain. No locks: the edge reads a
 * route again on each notification of a change, and all of them now and then.
 */
export class EdgeRouteRepository {
  constructor(private readonly manager: EntityManager) {}

  async all(): Promise<EdgeRoute[]> {
    const rows = await queryRows<Row>(this.manager, SELECT);
    return rows.map(toRoute);
  }

  /** Where the runtime's owner said its serving proxies are reached, or null before any deployer took the runtime. */
  async ownerAddress(): Promise<string | null> {
    const [row] = await queryRows<{ address: string }>(this.manager, `SELECT address FROM runtime_owner WHERE id = 1`);
    return row?.address ?? null;
  }

  /** Records the runtime owner's address (a deployer that took the runtime lock) and tells the edges. */
  async recordOwner(address: string): Promise<void> {
    await this.manager.query(
      `WITH owner AS (
         INSERT INTO runtime_owner (id, address, since) VALUES (1, $1, now())
         ON CONFLICT (id) DO UPDATE SET address = EXCLUDED.address, since = now() RETURNING 1)
       SELECT pg_notify($2, 'owner') FROM owner`,
      [address, EDGE_ROUTES_CHANNEL],
    );
  }

  /** One deployment's route, or null when it has none (gone, being deleted, or on a listener). */
  async one(deploymentId: string): Promise<EdgeRoute | null> {
    const [row] = await queryRows<Row>(this.manager, `${SELECT} AND d.id = $1`, [deploymentId]);
    return row ? toRoute(row) : null;
  }
}
