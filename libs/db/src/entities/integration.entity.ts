import { Column, Entity, PrimaryColumn } from 'typeorm';

export type IntegrationProvider = 'local' | 'github' | 'gitea';

/**
 * The non-secret settings of an integration, as stored and returned: `root` (local),
 * `api_url` (github, gitea), `app_id` and `installation_id` (a GitHub App).
 */
export interface IntegrationConfig {
  root?: string;
  api_url?: string;
  app_id?: string | number;
  installation_id?: number;
}

/** A repository-host integration of a workspace (docs/api.md, Integrations). */
@Entity({ name: 'integrations' })
export class Integration {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ type: 'uuid' })
  workspaceId!: string;

  @Column({ type: 'text' })
  provider!: IntegrationProvider;

  /** Unique in the workspace; the `owner` of every `local` repository. */
  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'jsonb', default: () => `'{}'::jsonb` })
  config!: IntegrationConfig;

  /** SecretBox of the JSON `{token}` or `{private_key}`, bound to the row id; null for `local`. */
  @Column({ type: 'text', nullable: true })
  credentialsSealed!: string | null;

  /** SecretBox of the push webhook's HMAC secret, bound to the row id. */
  @Column({ type: 'text', nullable: true })
  webhookSecretSealed!: string | null;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;
}

/** One call of an integration's push webhook, whatever came of it (docs/api.md, Integrations). */
@Entity({ name: 'webhook_deliveries' })
export class WebhookDelivery {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ type: 'uuid' })
  integrationId!: string;

  /** The host's id for the delivery (`X-GitHub-Delivery` / `X-Gitea-Delivery`); a re-delivery repeats it. */
  @Column({ type: 'text', nullable: true })
  deliveryId!: string | null;

  @Column({ type: 'text', nullable: true })
  event!: string | null;

  @Column({ type: 'text', nullable: true })
  ref!: string | null;

  @Column({ type: 'boolean' })
  signatureValid!: boolean;

  /** What the webhook answered. */
  @Column({ type: 'integer' })
  statusCode!: number;

  /** One sentence: what was done, or why nothing was. */
  @Column({ type: 'text' })
  outcome!: string;

  @Column({ type: 'uuid', array: true, default: () => `'{}'` })
  revisionIds!: string[];

  /** SHA-256 (hex) of the signed body of a push that was acted on: unique per integration (replays). */
  @Column({ type: 'text', nullable: true })
  payloadSha256!: string | null;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  receivedAt!: Date;
}
