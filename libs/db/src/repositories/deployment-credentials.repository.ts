import { randomBytes } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import type { SecretsCodec } from '@slipway/crypto';
import { queryRows } from '../sql.js';

/** A deployment's own store passwords (its Postgres role's, its Redis ACL user's), in clear. */
export interface StoreCredentials {
  databasePassword: string;
  redisPassword: string;
}

/** Loopback ports of a deployment's data-access fronts; null until first allocated. */
export interface FrontPorts {
  postgres: number | null;
  redis: number | null;
  trace: number | null;
}

/** The fronts a deployment may have, by the column their port is recorded in. */
const FRONT_PORT_COLUMNS = {
  postgres: 'postgres_front_port',
  redis: 'redis_front_port',
  trace: 'trace_front_port',
} as const;
export type FrontKind = keyof typeof FRONT_PORT_COLUMNS;

/** A deployment's store passwords as stored, sealed (read beside other rows, opened by `DeploymentCredentialStore.open`). */
export interface SealedCredentials {
  database: string;
  redis: string;
}

interface Row {
  database_password_sealed: string;
  redis_password_sealed: string;
  postgres_front_port: number | null;
  redis_front_port: number | null;
  trace_front_port: number | null;
}

/** 32 random bytes: URL-safe, so it goes into a connection URI unescaped. */
const newPassword = () => randomBytes(32).toString('base64url');

/** The deployment id and purpose are bound to each ciphertext, so a sealed value copied elsewhere does not open. */
const context = (deploymentId: string, purpose: 'database' | 'redis') =>
  `deployment-credentials/${deploymentId}/${purpose}`;

/**
 * The `deployment_credentials` rows: passwords generated once at random, sealed with the
 * secrets key (a rotated-out key stays in `previousSecretsKeys`, so old rows keep opening and the
 * passwords never change), and the fronts' recorded ports. A deployment without a row (created
 * before this table) gets one on first use; concurrent first uses agree on one row.
 */
export class DeploymentCredentialStore {
  constructor(
    private readonly manager: EntityManager,
    private readonly box: SecretsCodec,
  ) {}

  /** The deployment's credentials, generated and stored on first use. Throws when the deployment is gone. */
  async credentials(deploymentId: string): Promise<StoreCredentials> {
    return this.open(deploymentId, sealedOf((await this.row(deploymentId)) ?? (await this.create(deploymentId))));
  }

  /** Opens credentials read elsewhere; `null` (the deployment has no row yet) is `credentials`' first use. */
  async openSealed(deploymentId: string, sealed: SealedCredentials | null): Promise<StoreCredentials> {
    return sealed ? this.open(deploymentId, sealed) : this.credentials(deploymentId);
  }

  private open(deploymentId: string, sealed: SealedCredentials): StoreCredentials {
    return {
      databasePassword: this.box.open(sealed.database, context(deploymentId, 'database')),
      redisPassword: this.box.open(sealed.redis, context(deploymentId, 'redis')),
    };
  }

  /** The recorded front ports (both null when none were allocated yet). */
  async frontPorts(deploymentId: string): Promise<FrontPorts> {
    const row = await this.row(deploymentId);
    return {
      postgres: row?.postgres_front_port ?? null,
      redis: row?.redis_front_port ?? null,
      trace: row?.trace_front_port ?? null,
    };
  }

  /**
   * Records a front's port unless one is recorded already; returns the port that holds. Throws a
   * unique violation (23505) when another deployment holds `port`.
   */
  async claimFrontPort(deploymentId: string, front: FrontKind, port: number): Promise<number> {
    await this.credentials(deploymentId);
    const column = FRONT_PORT_COLUMNS[front];
    const [row] = await queryRows<{ port: number }>(
      this.manager,
      `UPDATE deployment_credentials SET ${column} = coalesce(${column}, $2) WHERE deployment_id = $1 RETURNING ${column} AS port`,
      [deploymentId, port],
    );
    if (!row) throw new Error(`Deployment ${deploymentId} is gone.`);
    return Number(row.port);
  }

  /** Every recorded front port (so the runtime never hands one to an instance). */
  async takenFrontPorts(): Promise<Set<number>> {
    const rows = await queryRows<{ port: number }>(
      this.manager,
      Object.values(FRONT_PORT_COLUMNS)
        .map((column) => `SELECT ${column} AS port FROM deployment_credentials WHERE ${column} IS NOT NULL`)
        .join(' UNION '),
    );
    return new Set(rows.map((r) => Number(r.port)));
  }

  private async row(deploymentId: string): Promise<Row | undefined> {
    const [row] = await queryRows<Row>(
      this.manager,
      `SELECT database_password_sealed, redis_password_sealed, postgres_front_port, redis_front_port, trace_front_port
         FROM deployment_credentials WHERE deployment_id = $1`,
      [deploymentId],
    );
    return row;
  }

  private async create(deploymentId: string): Promise<Row> {
    // ON CONFLICT DO NOTHING then read back: a concurrent first use wins or loses, both read its row.
    await this.manager.query(
      `INSERT INTO deployment_credentials (deployment_id, database_password_sealed, redis_password_sealed)
       SELECT id, $2, $3 FROM deployments WHERE id = $1
       ON CONFLICT (deployment_id) DO NOTHING`,
      [
        deploymentId,
        this.box.seal(newPassword(), context(deploymentId, 'database')),
        this.box.seal(newPassword(), context(deploymentId, 'redis')),
      ],
    );
    const row = await this.row(deploymentId);
    if (!row) throw new Error(`Deployment ${deploymentId} is gone.`);
    return row;
  }
}

const sealedOf = (row: Row): SealedCredentials => ({
  database: row.database_password_sealed,
  redis: row.redis_password_sealed,
});
