import { Foundation1763700000000 } from './1763700000000-foundation.js';
import { DeploymentsPipeline1763800000000 } from './1763800000000-deployments-pipeline.js';
import { CodeDeploys1763900000000 } from './1763900000000-code-deploys.js';
import { SandboxIdentities1764100000000 } from './1764100000000-sandbox-identities.js';
import { DeploymentCredentials1764150000000 } from './1764150000000-deployment-credentials.js';
import { WebhookReplay1764200000000 } from './1764200000000-webhook-replay.js';
import { QuotasRetention1764200000001 } from './1764200000001-quotas-retention.js';
import { ListIndexes1764400000000 } from './1764400000000-list-indexes.js';
import { LogFollow1764500000000 } from './1764500000000-log-follow.js';
import { Events1764500000001 } from './1764500000001-events.js';
import { OutboundWebhooks1764500000100 } from './1764500000100-outbound-webhooks.js';
import { WebhookFormat1764500000101 } from './1764500000101-webhook-format.js';
import { OutboxClaimIndex1764600000000 } from './1764600000000-outbox-claim-index.js';
import { NameTrgmNoPendingList1764600000100 } from './1764600000100-name-trgm-no-pending-list.js';
import { ListenerWorkIndex1764600000200 } from './1764600000200-listener-work-index.js';
import { Registry1764700000000 } from './1764700000000-registry.js';
import { SandboxNetworks1764700000100 } from './1764700000100-sandbox-networks.js';
import { DeploymentSlots1764800000000 } from './1764800000000-deployment-slots.js';
import { DeploymentSecretNames1764800000100 } from './1764800000100-deployment-secret-names.js';
import { DeploymentObservability1764800000300 } from './1764800000300-deployment-observability.js';
import { QueueWorkers1764800000400 } from './1764800000400-queue-workers.js';
import { OutboxNotify1764800000500 } from './1764800000500-outbox-notify.js';
import { ImageUnpackedBytes1764800000650 } from './1764800000650-image-unpacked-bytes.js';
import { TracingRuns1764900000000 } from './1764900000000-tracing-runs.js';
import { TracingRetention1764900000100 } from './1764900000100-tracing-retention.js';
import { TraceFronts1764900000200 } from './1764900000200-trace-fronts.js';
import { EdgeNames1765000000000 } from './1765000000000-edge-names.js';
import { DeploymentDomains1765000000100 } from './1765000000100-deployment-domains.js';
import { EdgeCertificates1765000000200 } from './1765000000200-edge-certificates.js';
import { RuntimeOwner1765000000300 } from './1765000000300-runtime-owner.js';
import { Previews1765000000400 } from './1765000000400-previews.js';
import { PreviewFeedback1765000000500 } from './1765000000500-preview-feedback.js';
import { PreviewRequests1765000000600 } from './1765000000600-preview-requests.js';
import { PreviewFeedbackEvents1765000000700 } from './1765000000700-preview-feedback-events.js';
import { RevisionOrigin1765000000800 } from './1765000000800-revision-origin.js';
import { RevisionSecretFingerprints1765000000900 } from './1765000000900-revision-secret-fingerprints.js';
import { RevisionListener1765000001000 } from './1765000001000-revision-listener.js';
import { PreviewRequestLabel1765000001100 } from './1765000001100-preview-request-label.js';

/**
 * Append-only: never edit a migration that has shipped; add a new one at the end.
 * Listed explicitly so the order is the array order, not a glob's.
 */
export const MIGRATIONS = [
  Foundation1763700000000,
  DeploymentsPipeline1763800000000,
  CodeDeploys1763900000000,
  SandboxIdentities1764100000000,
  DeploymentCredentials1764150000000,
  WebhookReplay1764200000000,
  QuotasRetention1764200000001,
  ListIndexes1764400000000,
  LogFollow1764500000000,
  Events1764500000001,
  OutboundWebhooks1764500000100,
  WebhookFormat1764500000101,
  OutboxClaimIndex1764600000000,
  NameTrgmNoPendingList1764600000100,
  ListenerWorkIndex1764600000200,
  Registry1764700000000,
  SandboxNetworks1764700000100,
  DeploymentSlots1764800000000,
  DeploymentSecretNames1764800000100,
  DeploymentObservability1764800000300,
  QueueWorkers1764800000400,
  OutboxNotify1764800000500,
  ImageUnpackedBytes1764800000650,
  TracingRuns1764900000000,
  TracingRetention1764900000100,
  TraceFronts1764900000200,
  EdgeNames1765000000000,
  DeploymentDomains1765000000100,
  EdgeCertificates1765000000200,
  RuntimeOwner1765000000300,
  Previews1765000000400,
  PreviewFeedback1765000000500,
  PreviewRequests1765000000600,
  PreviewFeedbackEvents1765000000700,
  RevisionOrigin1765000000800,
  RevisionSecretFingerprints1765000000900,
  RevisionListener1765000001000,
  PreviewRequestLabel1765000001100,
];
