import { Column, Entity, PrimaryColumn } from 'typeorm';

export type ApiKeyScope = 'workspace' | 'organization';
export type ApiKeyRole = 'admin' | 'member';

/** An API key, stored only as its SHA-256 hash plus a display prefix. */
@Entity({ name: 'api_keys' })
export class ApiKey {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ type: 'uuid' })
  organizationId!: string;

  /** Set for workspace-scoped keys; null for organization-scoped ones. */
  @Column({ type: 'uuid', nullable: true })
  workspaceId!: string | null;

  /** Set for a listener agent's key (docs/api.md, Listener agent protocol): it can call nothing else. */
  @Column({ type: 'uuid', nullable: true })
  listenerId!: string | null;

  @Column({ type: 'text' })
  scope!: ApiKeyScope;

  @Column({ type: 'text' })
  role!: ApiKeyRole;

  @Column({ type: 'text', default: '' })
  description!: string;

  @Column({ type: 'text' })
  prefix!: string;

  @Column({ type: 'text' })
  keyHash!: string;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ type: 'timestamptz', nullable: true })
  lastUsedAt!: Date | null;

  @Column({ type: 'timestamptz', nullable: true })
  revokedAt!: Date | null;
}
