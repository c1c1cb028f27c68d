import { Column, Entity, PrimaryColumn } from 'typeorm';

/** The tracing project created with each deployment; it outlives the deployment (its traces are data). */
@Entity({ name: 'tracing_projects' })
export class TracingProject {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ type: 'uuid' })
  workspaceId!: string;

  @Column({ type: 'text' })
  name!: string;

  /** Null once its deployment is gone; a new deployment of the same name re-attaches it. */
  @Column({ type: 'uuid', nullable: true })
  deploymentId!: string | null;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;
}
