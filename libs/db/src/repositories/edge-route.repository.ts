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
}

interface Row {
  id: string;
  edge_name: string;
  serving_port: number | null;
}

const toRoute = (r: Row): EdgeRoute => ({ deploymentId: r.id, edgeName: r.edge_name, servingPort: r.serving_port });

/**
 * The edge's reads (docs/operations.md, The edge): the deployments this machine's process
 * runtime serves (no listener) that are not being deleted, by name. No locks: the edge reads a
 * route again on each notification of a change, and all of them now and then.
 */
export class EdgeRouteRepository {
  constructor(private readonly manager: EntityManager) {}

  async all(): Promise<EdgeRoute[]> {
    const rows = await queryRows<Row>(
      this.manager,
      `SELECT id, edge_name, serving_port FROM deployments WHERE listener_id IS NULL AND edge_name IS NOT NULL AND status <> 'AWAITING_DELETE'`,
    );
    return rows.map(toRoute);
  }

  /** One deployment's route, or null when it has none (gone, being deleted, or on a listener). */
  async one(deploymentId: string): Promise<EdgeRoute | null> {
    const [row] = await queryRows<Row>(
      this.manager,
      `SELECT id, edge_name, serving_port FROM deployments
        WHERE id = $1 AND listener_id IS NULL AND edge_name IS NOT NULL AND status <> 'AWAITING_DELETE'`,
      [deploymentId],
    );
    return row ? toRoute(row) : null;
  }
}
