import { Column, Entity, PrimaryColumn } from 'typeorm';

/** An OAuth provider of the auth sub-service (docs/api.md, OAuth providers), owned by an organization. */
@Entity({ name: 'oauth_providers' })
export class OAuthProvider {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ type: 'uuid' })
  organizationId!: string;

  /** Chosen by the caller; unique within the organization. */
  @Column({ type: 'text' })
  providerId!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text' })
  clientId!: string;

  /** `SecretBox` output bound to the row id; the plaintext never leaves the service layer. */
  @Column({ type: 'text' })
  clientSecretSealed!: string;

  @Column({ type: 'text' })
  authUrl!: string;

  @Column({ type: 'text' })
  tokenUrl!: string;

  @Column({ type: 'boolean', default: false })
  usesPkce!: boolean;

  @Column({ type: 'text', nullable: true })
  codeChallengeMethod!: string | null;

  @Column({ type: 'text', nullable: true })
  providerType!: string | null;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;
}
