/** The API shapes the console reads (docs/api.md). Only the fields it uses. */
import { DEPLOYMENT_STATUSES, REVISION_TERMINAL, type RevisionStatus } from '@slipway/domain/status';

export { DEPLOYMENT_STATUSES, type RevisionStatus };

/** Statuses a revision never leaves (shared with the server's status machine). */
export const TERMINAL_REVISION_STATUSES: readonly RevisionStatus[] = [...REVISION_TERMINAL];
export const FAILED_REVISION_STATUSES: readonly RevisionStatus[] = [
  'CREATE_FAILED',
  'BUILD_FAILED',
  'DEPLOY_FAILED',
  'UNKNOWN',
];
export const DEPLOYMENT_TYPES = ['dev_free', 'dev', 'prod'] as const;

export interface Envelope<T> {
  resources: T[];
  offset: number;
}

export interface Deployment {
  id: string;
  name: string;
  source: string;
  status: string;
  deployment_type: string | null;
  source_config: Record<string, unknown> & { resource_spec?: unknown };
  source_revision_config: Record<string, unknown>;
  secrets: Array<{ name: string; value?: string }>;
  latest_revision_id: string | null;
  active_revision_id: string | null;
  image_version: string | null;
  url: string | null;
  /** Whether the platform serves its graphs as an agent server (null: nothing built yet). */
  agent_server?: boolean | null;
  /** Its tracing project (docs/tracing.md): the \`session\` its runs are queried by. */
  tracer_session_id?: string | null;
  tag_value_ids: string[];
  created_at: string;
  updated_at: string;
  /** A preview of a pull request of another deployment (docs/api.md, Previews); absent on older servers. */
  is_preview?: boolean;
  /** What it previews (null for a deployment that is not a preview). */
  preview?: DeploymentPreview | null;
}

/** A repohost deployment's `source_config.previews` (docs/api.md, Previews). */
export interface PreviewSettings {
  enabled?: boolean;
  ttl_hours?: number;
  database?: string;
  max_active?: number;
  resource_spec?: Record<string, unknown> | null;
}

/** A preview deployment's `preview`: its parent, the pull request it builds, when it is torn down. */
export interface DeploymentPreview {
  /** Null once the parent itself is gone. */
  parent_id: string | null;
  pull_request: { number: number; head_ref: string; head_sha: string | null; url: string | null };
  expires_at: string | null;
}

/** A custom domain's state (docs/api.md, Domains). */
export type DomainState = 'pending_verification' | 'issuing' | 'active' | 'failed';

/** A custom domain of a deployment (`GET /v2/deployments/{id}/domains`). */
export interface DeploymentDomain {
  host: string;
  state: DomainState;
  /** Why it is not active yet: the TXT record not found, or the ACME error. */
  error: string | null;
  /** The DNS record that proves control of the host, until it is found; then null. */
  verification: { type: 'TXT'; name: string; value: string } | null;
  /** The host of the deployment's `source_config.custom_url`. */
  from_custom_url: boolean;
  created_at: string;
}

export interface Revision {
  id: string;
  deployment_id: string;
  status: RevisionStatus;
  status_message: string | null;
  source: string;
  source_revision_config: Record<string, string | null>;
  image_uri: string | null;
  resource_spec: Record<string, unknown>;
  secrets: Array<{ name: string }>;
  /** Each secret's keyed fingerprint, to compare (null: made before they were kept; unknown). */
  secret_fingerprints?: Array<{ name: string; fingerprint: string | null }> | null;
  redeployed_from: string | null;
  /** Why it exists (null: made before this was recorded). */
  trigger?: RevisionTrigger | null;
  /** Who made it (null: made before this was recorded). */
  created_by?: { kind: 'api_key' | 'user' | 'system'; id: string | null; name: string | null } | null;
  created_at: string;
  updated_at: string;
}

export type RevisionTrigger =
  | 'create'
  | 'patch'
  | 'push'
  | 'upload'
  | 'image_push'
  | 'redeploy'
  | 'preview'
  | 'api_revision';

export interface StatusChange {
  from: RevisionStatus | null;
  to: RevisionStatus;
  at: string;
  time_in_status_ms: number | null;
}

export interface RevisionHistory {
  revision_id: string;
  status: RevisionStatus;
  status_message: string | null;
  created_at: string;
  changes: StatusChange[];
}

export interface LogEntry {
  id: string;
  timestamp: string;
  level: string;
  message: string;
  /** The instance that printed it (deploy logs). */
  instance?: number;
}

export interface LogPage {
  logs: LogEntry[];
  next_offset: string | null;
}

export interface Listener {
  id: string;
  compute_type: string;
  compute_id: string;
  compute_config: { k8s_namespaces: string[] | null };
  version: string | null;
  last_seen_at: string | null;
  created_at: string;
}

export interface Integration {
  id: string;
  provider: string;
  name: string;
  /** Where the host sends push and pull request events. */
  webhook_url?: string;
  created_at?: string;
}

/** The create answer: the webhook secret is in it and nowhere else, ever. */
export interface CreatedIntegration extends Integration {
  webhook_url: string;
  webhook_secret: string;
}

/** One branch of a repository (`GET …/branches`). */
export interface Branch {
  name: string;
  commit_sha: string;
  is_default: boolean;
}

export interface Repository {
  id: number | string;
  name: string;
  owner: string;
  url: string;
  default_branch: string | null;
}

export interface TagKey {
  id: string;
  key: string;
}

export interface TagValue {
  id: string;
  value: string;
}

/** A workspace event (docs/api.md, Events). */
export interface LiveEvent {
  id: string;
  type: string;
  deployment_id?: string | null;
  revision_id?: string | null;
  data?: Record<string, unknown> | null;
}

export interface Workspace {
  id: string;
  name: string;
}

/** The event types (docs/api.md, Events and webhooks). */
export const EVENT_TYPES = [
  'deployment.created',
  'deployment.status_changed',
  'deployment.deleted',
  'revision.created',
  'revision.status_changed',
] as const;

export interface WorkspaceEvent extends LiveEvent {
  created_at: string;
}

export interface ApiKey {
  id: string;
  prefix: string;
  description: string;
  scope: 'workspace' | 'organization';
  role: 'admin' | 'member';
  tenant_id: string | null;
  listener_id: string | null;
  created_at: string;
  last_used_at: string | null;
}

export interface Webhook {
  id: string;
  url: string;
  format: 'standard' | 'slack';
  description: string | null;
  event_types: string[];
  deployment_ids: string[] | null;
  created_at: string;
}

export interface WebhookDelivery {
  id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'succeeded' | 'failed';
  created_at: string;
  updated_at: string;
  event: WorkspaceEvent;
  attempts: Array<{
    round: number;
    attempt: number;
    attempted_at: string;
    duration_ms: number;
    response_status: number | null;
    error: string | null;
  }>;
}

/** A trace's summary row (`GET /v2/deployments/{id}/traces`, docs/tracing.md). */
export interface TraceSummary {
  trace_id: string;
  root_run_id: string | null;
  name: string | null;
  status: 'success' | 'error' | 'pending';
  start_time: string;
  end_time: string | null;
  /** Seconds; null while pending. */
  latency: number | null;
  run_count: number;
  error_count: number;
  total_tokens: number;
  thread_id: string | null;
  revision_id: string | null;
}

/** A run as `POST /api/v1/runs/query` and `GET /api/v1/runs/{id}` answer it (LangSmith's fields). */
export interface TracedRun {
  id: string;
  trace_id: string;
  name: string;
  run_type: string;
  status: 'success' | 'error' | 'pending';
  error: string | null;
  start_time: string;
  end_time: string | null;
  parent_run_id: string | null;
  dotted_order: string;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  /** A parent's include its descendants'. */
  total_tokens: number | null;
  thread_id?: string | null;
  inputs?: unknown;
  outputs?: unknown;
  events?: unknown[];
  extra?: { metadata?: Record<string, unknown> } & Record<string, unknown>;
}

export interface RunsPage {
  runs: TracedRun[];
  cursors: { next: string | null };
}
