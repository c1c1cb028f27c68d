import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { DeploymentRepository, IntegrationRepository, WebhookDelivery, type DataSource, type Integration } from '@slipway/db';
import { NotFoundError } from '@slipway/domain';
import type { Logger } from '@slipway/logging';
import { normalizeRepoUrl } from '@slipway/source';
import type { DeploymentService } from './deployment.service.js';
import { presentDelivery, type DeliveryView, type IntegrationService } from './integration.service.js';

export const INVALID_SIGNATURE = 'Invalid webhook signature.';
/** A deleted branch arrives as a push whose `after` is the null object id. */
const NULL_SHA = /^0+$/;
/** Still processing: the status a delivery row has until its outcome is known. */
const PROCESSING = 102;

export interface WebhookRequest {
  integrationId: string;
  headers: Record<string, unknown>;
  /** The exact bytes the host signed; absent when the body was not JSON. */
  rawBody: Buffer | undefined;
  body: unknown;
  requestId: string;
  log: Logger;
}

interface PushPayload {
  ref?: unknown;
  after?: unknown;
  deleted?: unknown;
  repository?: { clone_url?: unknown; html_url?: unknown; url?: unknown } | null;
}

const header = (headers: Record<string, unknown>, name: string): string | null => {
  const value = headers[name];
  const text = Array.isArray(value) ? value[0] : value;
  return typeof text === 'string' && text ? text.slice(0, 200) : null;
};

/** `X-Hub-Signature-256: sha256=<hex>` checked in constant time against our HMAC of the raw body. */
export function signatureValid(secret: string, rawBody: Buffer, given: string | null): boolean {
  const hex = given?.startsWith('sha256=') ? given.slice('sha256='.length) : null;
  if (!hex || !/^[0-9a-f]{64}$/i.test(hex)) return false;
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  return timingSafeEqual(expected, Buffer.from(hex, 'hex'));
}

/**
 * The repohost push webhook (docs/api.md, Integrations). Authenticated only by the HMAC of its body; every
 * delivery is recorded, whatever came of it. A push to a branch makes one revision for each
 * deployment of the integration that builds on push from that repository and branch, each in
 * its own transaction under the deployment lock (as a PATCH would), so one deployment being
 * deleted or busy never holds up the others.
 */
export class WebhookService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly integrations: IntegrationService,
    private readonly deployments: DeploymentService,
  ) {}

  async receive(req: WebhookRequest): Promise<DeliveryView> {
    const integration = await this.integrations.findForWebhook(req.integrationId);
    if (!integration) throw NotFoundError.of('Integration', req.integrationId);
    const event = header(req.headers, 'x-github-event') ?? header(req.headers, 'x-gitea-event');
    const deliveryId = header(req.headers, 'x-github-delivery') ?? header(req.headers, 'x-gitea-delivery');
    const record = (fields: Partial<WebhookDelivery> & Pick<WebhookDelivery, 'statusCode' | 'outcome' | 'signatureValid'>) =>
      new IntegrationRepository(this.dataSource.manager).insertDelivery(
        Object.assign(new WebhookDelivery(), {
          id: randomUUID(),
          integrationId: integration.id,
          deliveryId,
          event,
          ref: null,
          revisionIds: [],
          // The clock at insert, so deliveries list in arrival order even within one transaction.
          receivedAt: () => 'clock_timestamp()',
          ...fields,
        }),
      );

    if (!req.rawBody) {
      // express.json only parses (and keeps the bytes of) JSON bodies; a form-encoded
      // delivery cannot be checked, so say what to change rather than "bad signature".
      const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
      if (hasBody) {
        return presentDelivery(
          await record({ signatureValid: false, statusCode: 415, outcome: 'Webhook payloads must be sent as application/json; change the content type of the webhook.' }),
        );
      }
    }
    const secret = this.integrations.webhookSecret(integration);
    const given = header(req.headers, 'x-hub-signature-256');
    if (!secret || !signatureValid(secret, req.rawBody ?? Buffer.alloc(0), given)) {
      req.log.warn({ integrationId: integration.id, deliveryId }, 'webhook signature rejected');
      return presentDelivery(await record({ signatureValid: false, statusCode: 401, outcome: INVALID_SIGNATURE }));
    }

    if (event === 'ping') return presentDelivery(await record({ signatureValid: true, statusCode: 200, outcome: 'pong' }));
    if (!event) {
      return presentDelivery(await record({ signatureValid: true, statusCode: 400, outcome: 'Missing X-GitHub-Event (or X-Gitea-Event) header.' }));
    }
    if (event !== 'push') {
      return presentDelivery(
        await record({ signatureValid: true, statusCode: 200, outcome: `Event '${event}' ignored: only push events trigger builds.` }),
      );
    }
    return this.push(integration, req, deliveryId, record);
  }

  private async push(
    integration: Integration,
    req: WebhookRequest,
    deliveryId: string | null,
    record: (fields: Partial<WebhookDelivery> & Pick<WebhookDelivery, 'statusCode' | 'outcome' | 'signatureValid'>) => Promise<WebhookDelivery>,
  ): Promise<DeliveryView> {
    const payload = (req.body && typeof req.body === 'object' ? req.body : {}) as PushPayload;
    const ref = typeof payload.ref === 'string' && payload.ref ? payload.ref.slice(0, 1000) : null;
    const done = async (statusCode: number, outcome: string) => presentDelivery(await record({ signatureValid: true, statusCode, ref, outcome }));
    if (!ref) return done(400, 'The push payload has no ref.');
    if (ref.startsWith('refs/tags/')) return done(200, `Tag push ${ref} ignored: tags never trigger builds.`);
    if (!ref.startsWith('refs/heads/')) return done(200, `Push to ${ref} ignored: not a branch.`);
    const branch = ref.slice('refs/heads/'.length);
    const sha = typeof payload.after === 'string' ? payload.after : null;
    if (payload.deleted === true || (sha && NULL_SHA.test(sha))) return done(200, `Branch ${branch} was deleted; nothing to build.`);
    if (!sha || !/^[0-9a-f]{7,64}$/i.test(sha)) return done(400, 'The push payload has no commit id in `after`.');
    const repo = payload.repository ?? {};
    const urls = new Set(
      [repo.clone_url, repo.html_url, repo.url].filter((u): u is string => typeof u === 'string' && u !== '').map(normalizeRepoUrl),
    );
    if (!urls.size) return done(400, 'The push payload names no repository (repository.clone_url, html_url or url).');

    // Recorded before any revision, so each revision can be added to it in the same
    // transaction that creates it: a delivery never made a revision it does not list.
    const delivery = await record({ signatureValid: true, statusCode: PROCESSING, ref, outcome: 'Processing.' });
    const targets = (await new IntegrationRepository(this.dataSource.manager).pushTargets(integration.id)).filter(
      (t) => t.repoUrl && urls.has(normalizeRepoUrl(t.repoUrl)) && t.repoRef === branch,
    );
    const created: string[] = [];
    const notes: string[] = [];
    let failed = false;
    for (const target of targets) {
      try {
        const result = await this.dataSource.transaction(async (m) => {
          const deployment = await this.deployments.lock(m, target.workspaceId, target.deploymentId).catch((err) => {
            if (err instanceof NotFoundError) return null;
            throw err;
          });
          if (!deployment) return `deployment ${target.deploymentId} is gone`;
          // Re-checked under the lock: a PATCH or DELETE may have landed since the read above.
          const latest = deployment.latestRevisionId
            ? await new DeploymentRepository(m).findRevision(deployment.id, deployment.latestRevisionId)
            : null;
          if (deployment.status === 'AWAITING_DELETE') return `deployment ${deployment.id} is being deleted`;
          if (deployment.sourceConfig.build_on_push !== true || (latest?.sourceRevisionConfig.repo_ref ?? null) !== branch) {
            return `deployment ${deployment.id} no longer builds ${branch} on push`;
          }
          const repos = new IntegrationRepository(m);
          if (deliveryId) {
            const earlier = await repos.revisionFromDelivery(integration.id, deliveryId, deployment.id);
            if (earlier) return `deployment ${deployment.id} already got revision ${earlier} from delivery ${deliveryId}`;
          }
          const revisionId = await this.deployments.addPushRevision(m, deployment, branch, sha, req.requestId);
          await repos.addDeliveryRevision(delivery.id, revisionId);
          return { revisionId };
        });
        if (typeof result === 'string') notes.push(result);
        else created.push(result.revisionId);
      } catch (err) {
        failed = true;
        req.log.error({ err, deploymentId: target.deploymentId, deliveryId }, 'push webhook could not create a revision');
        notes.push(`deployment ${target.deploymentId} failed (internal error; a re-delivery retries it)`);
      }
    }

    const short = sha.slice(0, 12);
    const summary = created.length
      ? `Push to ${branch} (${short}): created ${created.length} revision${created.length === 1 ? '' : 's'}.`
      : targets.length
        ? `Push to ${branch} (${short}): no new revision.`
        : `Push to ${branch} (${short}): no deployment builds this repository's ${branch} on push.`;
    const outcome = notes.length ? `${summary} ${notes.map((n) => `${n[0]!.toUpperCase()}${n.slice(1)}.`).join(' ')}` : summary;
    return presentDelivery(await new IntegrationRepository(this.dataSource.manager).finishDelivery(delivery.id, failed ? 500 : 200, outcome));
  }
}
