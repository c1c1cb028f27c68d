import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A tenant (`X-Tenant-Id`): deployments, listeners and integrations live in one workspace. */
@Entity({ name: 'workspaces' })
export class Workspace {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ type: 'uuid' })
  organizationId!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;
}
