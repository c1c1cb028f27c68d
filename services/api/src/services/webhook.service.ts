import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Readable } from 'node:stream';
import {
  DeploymentRepository,
  IntegrationRepository,
  isForeignKeyViolation,
  isUniqueViolation,
  WebhookDelivery,
  type DataSource,
  type Integration,
} from '@slipway/db';
import { hasUnstorableCharacter, NotFoundError } from '@slipway/domain';
import type { Logger } from '@slipway/logging';
import { RevisionReads, RevisionRepository } from '@slipway/pipeline';
import { DeploymentReads } from '../reads/deployment-reads.js';
import { normalizeRepoUrl } from '@slipway/source';
import type { DeploymentService } from './deployment.service.js';
import { presentDelivery, type DeliveryView, type IntegrationService } from './integration.service.js';
import type { PullRequestPreviews } from './pull-request-previews.js';

export const INVALID_SIGNATURE = 'Invalid webhook signature.';
/** A deleted branch arrives as a push whose `after` is the null object id. */
const NULL_SHA = /^0+$/;
/** Still processing: the status a delivery row has until its outcome is known. */
const PROCESSING = 102;

export interface WebhookRequest {
  integrationId: string;
  headers: Record<string, unknown>;
  /** The unparsed body: it is read (bounded) and parsed only after the signature checks out. */
  body: Readable;
  requestId: string;
  log: Logger;
}

/** GitHub sends push payloads of up to 25 MB. */
export const MAX_PAYLOAD_BYTES = 25 * 1024 * 1024;
/** A signed push older than this (by the host's own signed `repository.pushed_at`) is a replay. */
export const REPLAY_WINDOW_MS = 7 * 24 * 60 * 60 * 1000;

/** What of a pull_request payload dates it (GitHub and Gitea both send it, ISO 8601). */
interface PullRequestDates {
  pull_request?: { updated_at?: unknown } | null;
}

type DeliveryFields = Partial<WebhookDelivery> & Pick<WebhookDelivery, 'statusCode' | 'outcome' | 'signatureValid'>;

interface PushPayload {
  ref?: unknown;
  after?: unknown;
  deleted?: unknown;
  repository?: { clone_url?: unknown; html_url?: unknown; url?: unknown; pushed_at?: unknown } | null;
}

const isJson = (contentType: unknown) =>
  typeof contentType === 'string' && /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(contentType);

/**
 * The body's bytes, at most `max` of them (undefined past it: the rest is discarded). Nothing
 * is parsed here.
 */
async function readBounded(body: Readable, max: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > max) {
      body.resume();
      return undefined;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
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

/** webhook_deliveries.integration_id → integrations (ON DELETE CASCADE). */
const DELIVERY_INTEGRATION_FK = 'webhook_deliveries_integration_id_fkey';

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
    private readonly now: () => number = Date.now,
    /** `pull_request` deliveries open and close previews (docs/api.md, Previews). */
    private readonly pullRequests?: PullRequestPreviews,
  ) {}

  /**
   * In this order, so an unauthenticated caller costs a lookup and a bounded read, never a parse:
   * the integration (404), the content type (415), the size (413), the HMAC over the raw bytes
   * (401), and only then JSON. Refused deliveries are recorded without their bodies.
   */
  async receive(req: WebhookRequest): Promise<DeliveryView> {
    const integration = await this.integrations.findForWebhook(req.integrationId);
    if (!integration) throw NotFoundError.of('Integration', req.integrationId);
    const event = header(req.headers, 'x-github-event') ?? header(req.headers, 'x-gitea-event');
    const deliveryId = header(req.headers, 'x-github-delivery') ?? header(req.headers, 'x-gitea-delivery');
    // The integration can be deleted between the lookup above and this insert, or between the
    // insert and its read-back (its deliveries go with it): the delivery then finds it gone, as
    // one arriving a moment later would.
    const gone = () => NotFoundError.of('Integration', integration.id);
    const record = (fields: DeliveryFields) =>
      new IntegrationRepository(this.dataSource.manager)
        .insertDelivery(
          Object.assign(new WebhookDelivery(), {
            id: randomUUID(),
            integrationId: integration.id,
            deliveryId,
            event,
            ref: null,
            revisionIds: [],
            payloadSha256: null,
            // The clock at insert, so deliveries list in arrival order even within one transaction.
            receivedAt: () => 'clock_timestamp()',
            ...fields,
          }),
        )
        .then(
          (recorded) => recorded ?? Promise.reject(gone()),
          (err: unknown) => {
            throw isForeignKeyViolation(err, DELIVERY_INTEGRATION_FK) ? gone() : err;
          },
        );
    const refuse = async (statusCode: number, outcome: string) => {
      req.body.resume();
      return presentDelivery(await record({ signatureValid: false, statusCode, outcome }));
    };

    const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (hasBody && !isJson(req.headers['content-type'])) {
      // A form-encoded delivery wraps the JSON in a form field: say what to change rather than "bad signature".
      return refuse(415, 'Webhook payloads must be sent as application/json; change the content type of the webhook.');
    }
    const tooLarge = `The payload is larger than the limit of ${MAX_PAYLOAD_BYTES} bytes.`;
    if (Number(req.headers['content-length'] ?? 0) > MAX_PAYLOAD_BYTES) return refuse(413, tooLarge);
    const secret = this.integrations.webhookSecret(integration);
    const given = header(req.headers, 'x-hub-signature-256');
    if (!secret || !given) {
      req.log.warn({ integrationId: integration.id, deliveryId }, 'webhook signature rejected');
      return refuse(401, INVALID_SIGNATURE);
    }
    const raw = await readBounded(req.body, MAX_PAYLOAD_BYTES);
    if (!raw) return refuse(413, tooLarge);
    if (!signatureValid(secret, raw, given)) {
      req.log.warn({ integrationId: integration.id, deliveryId }, 'webhook signature rejected');
      return refuse(401, INVALID_SIGNATURE);
    }

    let body: unknown;
    try {
      body = raw.length ? JSON.parse(raw.toString('utf8')) : {};
    } catch {
      return presentDelivery(
        await record({ signatureValid: true, statusCode: 400, outcome: 'The payload is not valid JSON.' }),
      );
    }
    const signed = { body, digest: createHash('sha256').update(raw).digest('hex') };
    if (event === 'ping')
      return presentDelivery(await record({ signatureValid: true, statusCode: 200, outcome: 'pong' }));
    if (!event) {
      return presentDelivery(
        await record({
          signatureValid: true,
          statusCode: 400,
          outcome: 'Missing X-GitHub-Event (or X-Gitea-Event) header.',
        }),
      );
    }
    if (event === 'pull_request' && this.pullRequests) return this.pullRequest(integration, req, signed, record, gone);
    if (event !== 'push') {
      return presentDelivery(
        await record({
          signatureValid: true,
          statusCode: 200,
          outcome: `Event '${event}' ignored: only push and pull_request events do anything.`,
        }),
      );
    }
    return this.push(integration, req, signed, deliveryId, record, gone);
  }

  /** A signed `pull_request` delivery, refused as a replay like a push (its digest is unique), then handed to the previews. */
  private async pullRequest(
    integration: Integration,
    req: WebhookRequest,
    signed: { body: unknown; digest: string },
    record: (fields: DeliveryFields) => Promise<WebhookDelivery>,
    gone: () => NotFoundError,
  ): Promise<DeliveryView> {
    // As a push's `pushed_at`: a signed pull request event older than the replay window is refused,
    // whatever the deliveries kept (their digests are pruned after 30 days).
    const updatedAt = Date.parse(String((signed.body as PullRequestDates | null)?.pull_request?.updated_at ?? ''));
    if (Number.isFinite(updatedAt) && updatedAt < this.now() - REPLAY_WINDOW_MS)
      return presentDelivery(
        await record({
          signatureValid: true,
          statusCode: 409,
          outcome:
            `Replayed pull request event refused: the pull request was last updated on ${new Date(updatedAt).toISOString()}, ` +
            `longer ago than the ${REPLAY_WINDOW_MS / 86_400_000}-day replay window.`,
        }),
      );
    const delivery = await record({
      signatureValid: true,
      statusCode: PROCESSING,
      outcome: 'Processing.',
      payloadSha256: signed.digest,
    }).catch((err) => {
      if (isUniqueViolation(err, 'webhook_deliveries_payload_key')) return null;
      throw err;
    });
    if (!delivery)
      return presentDelivery(
        await record({
          signatureValid: true,
          statusCode: 409,
          outcome: 'Replayed delivery refused: this exact signed payload was already received.',
        }),
      );
    const result = await this.pullRequests!.handle(integration, signed.body, req.requestId, req.log);
    const finished = await new IntegrationRepository(this.dataSource.manager).finishDelivery(
      delivery.id,
      result.statusCode,
      result.outcome,
      result.statusCode < 500,
    );
    if (!finished) throw gone();
    return presentDelivery(finished);
  }

  private async push(
    integration: Integration,
    req: WebhookRequest,
    signed: { body: unknown; digest: string },
    deliveryId: string | null,
    record: (fields: DeliveryFields) => Promise<WebhookDelivery>,
    gone: () => NotFoundError,
  ): Promise<DeliveryView> {
    const payload = (signed.body && typeof signed.body === 'object' ? signed.body : {}) as PushPayload;
    // A ref Postgres cannot store (U+0000, a lone surrogate) is no ref at all.
    const ref =
      typeof payload.ref === 'string' && payload.ref && !hasUnstorableCharacter(payload.ref)
        ? payload.ref.slice(0, 1000)
        : null;
    const done = async (statusCode: number, outcome: string) =>
      presentDelivery(await record({ signatureValid: true, statusCode, ref, outcome }));
    if (!ref) return done(400, 'The push payload has no ref.');
    if (ref.startsWith('refs/tags/')) return done(200, `Tag push ${ref} ignored: tags never trigger builds.`);
    if (!ref.startsWith('refs/heads/')) return done(200, `Push to ${ref} ignored: not a branch.`);
    const branch = ref.slice('refs/heads/'.length);
    const sha = typeof payload.after === 'string' ? payload.after : null;
    if (payload.deleted === true || (sha && NULL_SHA.test(sha)))
      return done(200, `Branch ${branch} was deleted; nothing to build.`);
    if (!sha || !/^[0-9a-f]{7,64}$/i.test(sha)) return done(400, 'The push payload has no commit id in `after`.');
    const repo = payload.repository ?? {};
    const urls = new Set(
      [repo.clone_url, repo.html_url, repo.url]
        .filter((u): u is string => typeof u === 'string' && u !== '')
        .map(normalizeRepoUrl),
    );
    if (!urls.size) return done(400, 'The push payload names no repository (repository.clone_url, html_url or url).');

    const pushedAt = typeof payload.repository?.pushed_at === 'number' ? payload.repository.pushed_at * 1000 : null;
    if (pushedAt !== null && pushedAt < this.now() - REPLAY_WINDOW_MS) {
      return done(
        409,
        `Replayed push refused: it was pushed on ${new Date(pushedAt).toISOString()}, ` +
          `longer ago than the ${REPLAY_WINDOW_MS / 86_400_000}-day replay window.`,
      );
    }

    // Recorded before any revision, so each revision can be added to it in the same
    // transaction that creates it: a delivery never made a revision it does not list. The
    // digest of the signed body is unique per integration: the same push sent again (whatever
    // its unsigned delivery id) is refused here, atomically, before anything is built.
    const delivery = await record({
      signatureValid: true,
      statusCode: PROCESSING,
      ref,
      outcome: 'Processing.',
      payloadSha256: signed.digest,
    }).catch((err) => {
      if (isUniqueViolation(err, 'webhook_deliveries_payload_key')) return null;
      throw err;
    });
    if (!delivery)
      return done(409, 'Replayed push refused: this exact signed payload was already received; nothing was built.');
    const targets = (await new DeploymentReads(this.dataSource.manager).pushTargets(integration.id)).filter(
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
            ? await new RevisionRepository(m).find(deployment.id, deployment.latestRevisionId)
            : null;
          if (deployment.status === 'AWAITING_DELETE') return `deployment ${deployment.id} is being deleted`;
          if (
            deployment.sourceConfig.build_on_push !== true ||
            (latest?.sourceRevisionConfig.repo_ref ?? null) !== branch
          ) {
            return `deployment ${deployment.id} no longer builds ${branch} on push`;
          }
          if (deliveryId) {
            const earlier = await new RevisionReads(m).fromDelivery(integration.id, deliveryId, deployment.id);
            if (earlier)
              return `deployment ${deployment.id} already got revision ${earlier} from delivery ${deliveryId}`;
          }
          const revisionId = await this.deployments.addPushRevision(m, deployment, branch, sha, req.requestId);
          await new IntegrationRepository(m).addDeliveryRevision(delivery.id, revisionId);
          return { revisionId };
        });
        if (typeof result === 'string') notes.push(result);
        else created.push(result.revisionId);
      } catch (err) {
        failed = true;
        req.log.error(
          { err, deploymentId: target.deploymentId, deliveryId },
          'push webhook could not create a revision',
        );
        notes.push(`deployment ${target.deploymentId} failed (internal error; a re-delivery retries it)`);
      }
    }

    const short = sha.slice(0, 12);
    const summary = created.length
      ? `Push to ${branch} (${short}): created ${created.length} revision${created.length === 1 ? '' : 's'}.`
      : targets.length
        ? `Push to ${branch} (${short}): no new revision.`
        : `Push to ${branch} (${short}): no deployment builds this repository's ${branch} on push.`;
    const outcome = notes.length
      ? `${summary} ${notes.map((n) => `${n[0]!.toUpperCase()}${n.slice(1)}.`).join(' ')}`
      : summary;
    // A failed push keeps no digest, so the host's re-delivery can retry the deployments that failed.
    const finished = await new IntegrationRepository(this.dataSource.manager).finishDelivery(
      delivery.id,
      failed ? 500 : 200,
      outcome,
      !failed,
    );
    if (!finished) throw gone();
    return presentDelivery(finished);
  }
}
