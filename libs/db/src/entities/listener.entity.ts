import { Column, Entity, PrimaryColumn } from 'typeorm';

export interface ComputeConfig {
  /** Namespaces deployments may use; null: any. */
  k8s_namespaces?: string[] | null;
  /** Relaxations of the pod policy (libs/runtime, pod-policy.ts), set by a workspace admin; null: none. */
  pod_policy?: {
    volume_types?: string[];
    namespace_config_refs?: boolean;
    service_account?: boolean;
    ingress_annotations?: boolean;
  } | null;
}

/** A registered cluster that self-hosted deployments run on (docs/api.md, Listeners). */
@Entity({ name: 'listeners' })
export class Listener {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ type: 'uuid' })
  workspaceId!: string;

  @Column({ type: 'text' })
  computeType!: string;

  @Column({ type: 'text' })
  computeId!: string;

  @Column({ type: 'jsonb', default: () => `'{}'::jsonb` })
  computeConfig!: ComputeConfig;

  @Column({ type: 'text', nullable: true })
  version!: string | null;

  /** Last time the listener agent called in (C12); null until it does. */
  @Column({ type: 'timestamptz', nullable: true })
  lastSeenAt!: Date | null;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;
}
