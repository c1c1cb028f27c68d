/**
 * The listener agent protocol's wire types (docs/api.md, Listener agent protocol), written once
 * for both sides: the api validates and answers with them (services/api, listener-agent.schema.ts
 * and listener-agent.service.ts), the agent reads and sends them (services/listener-agent).
 */
import type { ResourceSpec } from './resource-spec.js';

/** The statuses a listener agent may report for a revision. */
export const REPORTABLE_STATUSES = ['DEPLOYING', 'DEPLOYED', 'DEPLOY_FAILED'] as const;
export type ReportableStatus = (typeof REPORTABLE_STATUSES)[number];

export const REPORT_LOG_LEVELS = ['info', 'warn', 'error'] as const;
export type ReportLogLevel = (typeof REPORT_LOG_LEVELS)[number];

/** At most this many entries per array of a report: an agent batches, but not without bound. */
export const REPORT_MAX_ITEMS = 500;

export const DESIRED_ACTIONS = ['apply', 'delete'] as const;
export type DesiredAction = (typeof DESIRED_ACTIONS)[number];

/** One deployment of the desired state. `M` is how a side types a rendered Kubernetes object. */
export interface DesiredDeployment<M = object> {
  deployment_id: string;
  name: string;
  namespace: string;
  revision_id: string | null;
  action: DesiredAction;
  image_uri: string | null;
  resource_spec: ResourceSpec | null;
  /** The revision's secret values: in this response and in no other. */
  secrets: Array<{ name: string; value: string }>;
  manifests: M[];
}

/** `GET /v2/listeners/{id}/desired-state`. */
export interface DesiredState<M = object> {
  listener_id: string;
  generated_at: string;
  deployments: Array<DesiredDeployment<M>>;
}

export interface RevisionReport {
  revision_id: string;
  status: ReportableStatus;
  message?: string | null;
}

export interface ReportLogLine {
  revision_id: string;
  level: ReportLogLevel;
  message: string;
}

/** `POST /v2/listeners/{id}/reports`. */
export interface ListenerReport {
  revisions: RevisionReport[];
  logs: ReportLogLine[];
  deleted_deployments: string[];
}

export type Rejection = { revision_id: string; reason: string } | { deployment_id: string; reason: string };

/** The answer to a report: what was recorded, and what changed nothing and why. */
export interface ReportResult {
  applied: string[];
  deleted: string[];
  rejected: Rejection[];
}
