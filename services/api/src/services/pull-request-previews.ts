import type { Integration } from '@slipway/db';
import { AppError, NotFoundError, systemActor } from '@slipway/domain';
import type { Logger } from '@slipway/logging';
import { DeploymentReads } from '../reads/deployment-reads.js';
import { normalizeRepoUrl } from '@slipway/source';
import type { DataSource } from '@slipway/db';
import { approvalLabelOf } from './preview-settings.js';
import { actingAs } from './request-actor.js';
import type { PreviewService } from './preview.service.js';

/** What a `pull_request` delivery came to: the delivery's status and outcome (docs/api.md, Integrations). */
export interface PullRequestOutcome {
  statusCode: number;
  outcome: string;
  ref: string | null;
}

interface RepoShape {
  full_name?: unknown;
  clone_url?: unknown;
  html_url?: unknown;
  url?: unknown;
}

interface PullRequestPayload {
  action?: unknown;
  number?: unknown;
  label?: { name?: unknown } | null;
  pull_request?: {
    number?: unknown;
    html_url?: unknown;
    labels?: unknown;
    head?: { ref?: unknown; sha?: unknown; repo?: RepoShape | null } | null;
    base?: { repo?: RepoShape | null } | null;
  } | null;
  repository?: RepoShape | null;
}

/** GitHub says `synchronize` for a new head, Gitea (under the same `pull_request` event) `synchronized`. */
const OPENING = new Set(['opened', 'reopened', 'synchronize', 'synchronized']);

/** The labels the pull request has now (every `pull_request` payload carries them, GitHub's and Gitea's). */
function labelsNow(payload: PullRequestPayload): string[] {
  const labels = Array.isArray(payload.pull_request?.labels)
    ? (payload.pull_request!.labels as Array<{ name?: unknown }>)
    : [];
  return labels.map((l) => str(l?.name)).filter((l): l is string => l !== null);
}
const str = (v: unknown) => (typeof v === 'string' && v ? v : null);
/** A head ref that names a branch (`feat/x`), not a full ref such as `refs/pull/7/head`. */
const isBranchName = (ref: string | null) => ref !== null && !ref.startsWith('refs/');
const urlsOf = (repo: RepoShape | null | undefined) =>
  new Set(
    [repo?.clone_url, repo?.html_url, repo?.url]
      .filter((u): u is string => typeof u === 'string' && u !== '')
      .map(normalizeRepoUrl),
  );

/**
 * Previews driven by the forge (docs/api.md, Previews): a signed `pull_request` delivery of an
 * integration opens (`opened`, `reopened`) or rolls out (`synchronize`) the preview of every
 * deployment of that repository with previews on, at the pull request's head, and `closed`
 * tears them down. A pull request from a fork builds nothing: fork code never builds on its own;
 * an admin's approve, or `labeled` with the parent's approval label (adding a label takes write
 * access to the repository), builds the head that is waiting — the head the labelled event names,
 * never a newer one. Other actions are recorded and ignored. The delivery's signature and replay checks are the
 * push webhook's (WebhookService), done before this runs.
 */
export class PullRequestPreviews {
  constructor(
    private readonly dataSource: DataSource,
    private readonly previews: PreviewService,
  ) {}

  /** The delivery's outcome; the revisions it makes are Slipway's, set off by the pull request (`created_by`). */
  handle(integration: Integration, body: unknown, requestId: string, log: Logger): Promise<PullRequestOutcome> {
    const number = (body as PullRequestPayload | null)?.number;
    const actor = systemActor(typeof number === 'number' ? `pull request #${number}` : 'pull request', integration.id);
    return actingAs(actor, () => this.respond(integration, body, requestId, log));
  }

  private async respond(
    integration: Integration,
    body: unknown,
    requestId: string,
    log: Logger,
  ): Promise<PullRequestOutcome> {
    const payload = (body && typeof body === 'object' ? body : {}) as PullRequestPayload;
    const action = str(payload.action);
    const pr = payload.pull_request ?? null;
    const number =
      typeof payload.number === 'number' ? payload.number : typeof pr?.number === 'number' ? pr.number : null;
    const ref = str(pr?.head?.ref);
    const done = (statusCode: number, outcome: string): PullRequestOutcome => ({
      statusCode,
      outcome,
      ref: ref ? `refs/heads/${ref}` : null,
    });
    if (!action || number === null || !Number.isInteger(number) || number < 1 || !pr)
      return done(400, 'The pull_request payload has no action, number or pull_request.');
    // GitHub says `labeled` with the label added; Gitea `label_updated` with the pull request's labels,
    // and `label_cleared` when all of them were taken off at once.
    const labelAction = action === 'labeled' || action === 'label_updated' || action === 'label_cleared';
    if (!OPENING.has(action) && action !== 'closed' && !labelAction)
      return done(200, `Pull request #${number} ${action}: nothing to do for previews.`);
    const base = urlsOf(pr.base?.repo ?? payload.repository);
    if (!base.size) return done(400, 'The pull_request payload names no repository.');
    const parents = (await new DeploymentReads(this.dataSource.manager).previewParents(integration.id)).filter(
      (p) => p.repoUrl && base.has(normalizeRepoUrl(p.repoUrl)),
    );
    if (!parents.length) return done(200, `Pull request #${number}: no deployment of this repository has previews on.`);

    const notes: string[] = [];
    let failed = false;
    for (const parent of parents) {
      try {
        if (labelAction) {
          const label = approvalLabelOf(parent.previews);
          const sha = str(pr.head?.sha);
          // GitHub names the label it added. Gitea lists the labels the pull request has now, whichever
          // changed: its label approves only a head that arrived while the label was off, so a label
          // left on from an earlier head approves no newer one when another label changes.
          const added =
            action === 'labeled'
              ? str(payload.label?.name) === label
              : action === 'label_updated' && labelsNow(payload).includes(label ?? '');
          if (label && action !== 'labeled' && !added) {
            await this.previews.approvalLabelRemoved(parent.workspaceId, parent.deploymentId, number);
            notes.push(`deployment ${parent.deploymentId}: not its approval label`);
            continue;
          }
          if (!label || !added || !sha) {
            notes.push(`deployment ${parent.deploymentId}: not its approval label`);
            continue;
          }
          const match = { headSha: sha, unlabeled: action === 'label_updated' };
          await this.previews.approve(parent.workspaceId, parent.deploymentId, number, requestId, match).then(
            ({ view }) => notes.push(`approved by label '${label}': preview ${view.name} at ${sha}`),
            (err) =>
              err instanceof NotFoundError
                ? notes.push(
                    `deployment ${parent.deploymentId}: nothing waiting at ${sha}` +
                      (match.unlabeled ? ` since the label '${label}' was added (remove it and add it again)` : ''),
                  )
                : Promise.reject(err),
          );
          continue;
        }
        if (action === 'closed') {
          await this.previews.close(parent.workspaceId, parent.deploymentId, number, requestId, 'closed').then(
            () => notes.push(`preview of deployment ${parent.deploymentId} torn down`),
            (err) =>
              err instanceof NotFoundError
                ? notes.push(`deployment ${parent.deploymentId} had no preview`)
                : Promise.reject(err),
          );
          continue;
        }
        const headRepo = pr.head?.repo;
        // Unless the payload names both repositories and they are the same, the head is a fork's (the safe side).
        // So is a head that is no branch: Gitea's AGit pull requests (`git push origin HEAD:refs/for/main`,
        // open to anyone who can read the repository) name the base repository as their head's and
        // `refs/pull/<n>/head` as its ref.
        const baseName = str((pr.base?.repo ?? payload.repository)?.full_name);
        const fork = !headRepo || !baseName || str(headRepo.full_name) !== baseName || !isBranchName(ref);
        const sha = str(pr.head?.sha)?.match(/^[0-9a-f]{7,64}$/) ? str(pr.head?.sha) : null;
        if (fork) {
          // Fork code never builds on its own: an admin approves this head (POST …/previews/{number}/approve), or the approval label.
          if (!ref || !sha) return done(400, 'The pull_request payload has no head ref or commit.');
          const repository = str((pr.base?.repo ?? payload.repository)?.full_name);
          const label = approvalLabelOf(parent.previews);
          await this.previews.awaitApproval(parent.workspaceId, parent.deploymentId, {
            number,
            headRef: ref,
            headSha: sha,
            url: str(pr.html_url),
            repository,
            forkRepository: str(headRepo?.full_name),
            labeled: label !== null && labelsNow(payload).includes(label),
          });
          notes.push(
            `not built for deployment ${parent.deploymentId}: the pull request comes from a fork ` +
              `(${str(headRepo?.full_name) ?? 'a deleted repository'}); ` +
              `waiting for an admin's POST ` +
              `/v2/deployments/${parent.deploymentId}/previews/${number}/approve${
                approvalLabelOf(parent.previews) ? ` or the label '${approvalLabelOf(parent.previews)}'` : ''
              }`,
          );
          continue;
        }
        if (!ref) return done(400, 'The pull_request payload has no head ref.');
        const { view, created } = await this.previews.open(
          parent.workspaceId,
          parent.deploymentId,
          {
            ref,
            number,
            head_sha: sha,
            url: str(pr.html_url),
            repository: str((pr.base?.repo ?? payload.repository)?.full_name),
          },
          requestId,
        );
        notes.push(`preview ${view.name} ${created ? 'opened' : 'rolling out'} (revision ${view.latest_revision_id})`);
      } catch (err) {
        failed = true;
        log.error(
          { err, deploymentId: parent.deploymentId, number },
          'pull_request webhook could not update a preview',
        );
        // The client's mistakes and limits (a quota, a name) are said; anything else is logged only.
        notes.push(
          `deployment ${parent.deploymentId} ` +
            `failed: ${err instanceof AppError ? err.message : 'internal error (a re-delivery retries it)'}`,
        );
      }
    }
    return done(failed ? 500 : 200, `Pull request #${number} ${action}: ${notes.join('; ')}.`);
  }
}
