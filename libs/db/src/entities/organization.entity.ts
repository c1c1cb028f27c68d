import { Column, Entity, PrimaryColumn } from 'typeorm';

/** The top of the tenancy tree: owns workspaces, API keys and OAuth providers. */
@Entity({ name: 'organizations' })
export class Organization {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;
}
