import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A tag key of a workspace (e.g. `team`). */
@Entity({ name: 'tag_keys' })
export class TagKey {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ type: 'uuid' })
  workspaceId!: string;

  @Column({ type: 'text' })
  key!: string;

  @Column({ type: 'text', default: '' })
  description!: string;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;
}

/** A value of a tag key (e.g. `team=search`); deployments carry values. */
@Entity({ name: 'tag_values' })
export class TagValue {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ type: 'uuid' })
  tagKeyId!: string;

  @Column({ type: 'text' })
  value!: string;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;
}
