import { Column, Entity, PrimaryColumn } from 'typeorm';
import type {
  DeploymentSource,
  DeploymentStatus,
  DeploymentType,
  ResourceSpec,
  ResourceSpecInput,
} from '@slipway/domain';

/** `source_config` as stored, minus `resource_spec` (its own column, fully resolved). */
export interface StoredSourceConfig {
  integration_id?: string | null;
  repo_url?: string | null;
  build_on_push?: boolean | null;
  custom_url?: string | null;
  listener_id?: string | null;
  listener_config?: { k8s_namespace?: string | null } | null;
  install_command?: string | null;
  build_command?: string | null;
  /** Agent servers: 'none' opens the serving URL to anyone; otherwise a workspace API key is required. */
  serving_auth?: 'api_key' | 'none' | null;
  /** false: instances get no tracing variables (docs/tracing.md); null or true: they trace to the deployment's project. */
  tracing?: boolean | null;
  /** Previews per pull request (repohost only; docs/api.md, Previews). */
  previews?: PreviewSettings | null;
}

/** What a preview deployment records of its pull request. */
export interface PreviewRecord {
  pull_request: { number: number; head_ref: string; head_sha: string | null; url: string | null };
  /** The forge's `owner/name` of the pull request's repository, when a forge opened it: where its statuses and comment go. */
  repository?: string | null;
}

/** A parent's `source_config.previews` (docs/api.md, Previews). */
export interface PreviewSettings {
  enabled: boolean;
  ttl_hours: number;
  database: 'empty' | 'copy';
  max_active: number;
  /**
   * The forge label whose adding approves a fork's waiting head (as an admin's approve does); null:
   * only admins approve. Absent in settings stored before it existed: DEFAULT_APPROVAL_LABEL.
   */
  approval_label?: string | null;
  /** Overrides of the parent's resource_spec. */
  resource_spec?: ResourceSpecInput | null;
  /** Overrides of the parent's secrets: their names, and their values sealed (context `<id>:previews`), never in clear. */
  secret_names?: string[];
  secrets_sealed?: string | null;
}

/** A deployment of an agent server (docs/api.md, Deployments). */
@Entity({ name: 'deployments' })
export class Deployment {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ type: 'uuid' })
  workspaceId!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text' })
  source!: DeploymentSource;

  @Column({ type: 'text' })
  status!: DeploymentStatus;

  @Column({ type: 'text', nullable: true })
  deploymentType!: DeploymentType | null;

  @Column({ type: 'uuid', nullable: true })
  tracingProjectId!: string | null;

  /** Denormalized from source_config for the FK (a listener in use cannot be deleted). */
  @Column({ type: 'uuid', nullable: true })
  listenerId!: string | null;

  /** Denormalized from source_config for the FK (an integration in use cannot be deleted). */
  @Column({ type: 'uuid', nullable: true })
  integrationId!: string | null;

  @Column({ type: 'jsonb' })
  sourceConfig!: StoredSourceConfig;

  @Column({ type: 'jsonb' })
  resourceSpec!: ResourceSpec;

  /** SecretBox of the JSON `[{name, value}]`, bound to the deployment id. */
  @Column({ type: 'text', nullable: true })
  secretsSealed!: string | null;

  /** The secrets' names, so showing them opens no box; null on rows older than the column until `slipway migrate` fills them. */
  @Column({ type: 'text', array: true, nullable: true })
  secretNames!: string[] | null;

  @Column({ type: 'text', nullable: true })
  imageVersion!: string | null;

  @Column({ type: 'uuid', nullable: true })
  latestRevisionId!: string | null;

  @Column({ type: 'uuid', nullable: true })
  activeRevisionId!: string | null;

  /** Its own database, once provisioned. */
  @Column({ type: 'text', nullable: true })
  databaseName!: string | null;

  /** Cloud-hosted: the process runtime's stable serving port (its proxy), once allocated. */
  @Column({ type: 'integer', nullable: true })
  servingPort!: number | null;

  /**
   * Its DNS label at the edge (`<edge_name>.<apps domain>`), unique in the installation; chosen by
   * the database as the row is inserted (migration 1765000000000-edge-names), never written here.
   */
  @Column({ type: 'text', nullable: true, insert: false, update: false })
  edgeName!: string | null;

  /** A preview's parent deployment (docs/api.md, Previews); null for any other deployment. */
  @Column({ type: 'uuid', nullable: true, insert: false, update: false })
  previewOf!: string | null;

  /** A preview's pull request. */
  @Column({ type: 'jsonb', nullable: true, insert: false, update: false })
  preview!: PreviewRecord | null;

  @Column({ type: 'timestamptz', nullable: true, insert: false, update: false })
  previewExpiresAt!: Date | null;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  statusChangedAt!: Date;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  lastActivityAt!: Date;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;
}
