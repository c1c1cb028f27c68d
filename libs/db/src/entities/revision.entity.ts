import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { DeploymentSource, ResourceSpec, RevisionActor, RevisionStatus, RevisionTrigger } from '@slipway/domain';

export interface StoredRevisionConfig {
  repo_ref?: string | null;
  graph_config_path?: string | null;
  image_uri?: string | null;
  repo_commit_sha?: string | null;
  /** Set by the build from its checkout: the commit's message (cut) and its author's name. */
  repo_commit_message?: string | null;
  repo_commit_author?: string | null;
  source_tarball_path?: string | null;
  /** Set by the build: whether the platform serves the project's graphs (the artifact's `agent_server`). */
  agent_server?: boolean;
  /** Set by an image revision's rollout: the custom auth handler its image names (`LANGGRAPH_AUTH`), null: none. */
  agent_server_auth_path?: string | null;
}

/** Build settings snapshotted from the deployment when the revision was made. */
export interface BuildConfig {
  install_command?: string | null;
  build_command?: string | null;
}

/** One immutable attempt to roll out a configuration of a deployment (docs/api.md, Revisions). */
@Entity({ name: 'revisions' })
export class Revision {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ type: 'uuid' })
  deploymentId!: string;

  @Column({ type: 'text' })
  status!: RevisionStatus;

  @Column({ type: 'text', nullable: true })
  statusMessage!: string | null;

  @Column({ type: 'text' })
  source!: DeploymentSource;

  @Column({ type: 'jsonb' })
  sourceRevisionConfig!: StoredRevisionConfig;

  /** The artifact the deployer rolled out (an image, or a built artifact's URI). */
  @Column({ type: 'text', nullable: true })
  imageUri!: string | null;

  /** Image revisions of the built-in registry: the manifest digest it runs (a tag is resolved when the revision is made). */
  @Column({ type: 'text', nullable: true })
  imageDigest!: string | null;

  /** Set once built: what a redeploy reuses without rebuilding. */
  @Column({ type: 'text', nullable: true })
  artifactRef!: string | null;

  /** Set when retention removed the built artifact (artifact_ref is then NULL): a redeploy rebuilds. */
  @Column({ type: 'timestamptz', nullable: true })
  artifactPrunedAt!: Date | null;

  @Column({ type: 'jsonb' })
  resourceSpec!: ResourceSpec;

  /** SecretBox of the JSON `[{name, value}]`, bound to the revision id. */
  @Column({ type: 'text', nullable: true })
  secretsSealed!: string | null;

  @Column({ type: 'text', array: true, default: () => `'{}'` })
  secretNames!: string[];

  /** Each secret's keyed fingerprint by name (@slipway/crypto secretFingerprint); null: made before they were kept. */
  @Column({ type: 'jsonb', nullable: true })
  secretFingerprints!: Record<string, string> | null;

  @Column({ type: 'jsonb', default: () => `'{}'::jsonb` })
  buildConfig!: BuildConfig;

  @Column({ type: 'uuid', nullable: true })
  redeployedFrom!: string | null;

  /** Why it exists (null: made before this was recorded). */
  @Column({ type: 'text', nullable: true })
  trigger!: RevisionTrigger | null;

  /** Who made it (null: made before this was recorded). */
  @Column({ type: 'jsonb', nullable: true })
  createdBy!: RevisionActor | null;

  /** Set when the revision took the deployment's in-flight slot. */
  @Column({ type: 'timestamptz', nullable: true })
  startedAt!: Date | null;

  /** When the current phase must be over; the reconciler fails it after. */
  @Column({ type: 'timestamptz', nullable: true })
  deadlineAt!: Date | null;

  /** Refreshed by the worker while it works; a stale one means the worker died. */
  @Column({ type: 'timestamptz', nullable: true })
  heartbeatAt!: Date | null;

  /** How many times its current job was (re-)enqueued. */
  @Column({ type: 'integer', default: 0 })
  attempt!: number;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  statusChangedAt!: Date;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;
}
