import { createHmac } from 'node:crypto';
import { ServingUrls, type Config } from '@slipway/config';
import { deriveKey, type SecretsCodec } from '@slipway/crypto';
import { PreviewRepository, type DataSource, type FeedbackDue, type ForgeOpenedCursor } from '@slipway/db';
import type { DeploymentSource } from '@slipway/domain';
import { PeriodicPass, type Logger } from '@slipway/logging';
import { beginDeploymentDelete, type RevisionFlow } from '@slipway/pipeline';
import type { CommitStatus } from '@slipway/source';
import { integrationProvider } from './integration-provider.js';

/** How often forge-opened previews are looked at. */
const EVERY_MS = 3_000;
/** A state the forge would not take after this many tries is given up (its error kept). */
const MAX_ATTEMPTS = 5;
/** How often the forge is asked whether each preview's pull request is still open (a missed `closed` delivery). */
const OPEN_CHECK_MS = 10 * 60_000;
/** Previews whose pull request one check asks the forge about (the next check goes on from there). */
const OPEN_CHECK_BATCH = 200;

const WORDS = { pending: 'building', success: 'deployed', failure: 'failed' } as const;

/** The integrations' providers opened during one pass, by integration id (null: the integration is gone). */
type PassProviders = Map<string, Awaited<ReturnType<typeof integrationProvider>>>;

/**
 * Tells pull requests about their previews (docs/api.md, Previews): for each preview a forge
 * opened, a commit status on the pull request's head (pending while its latest revision builds
 * and rolls out, success with the preview's URL, failure with the revision's `status_message`)
 * and one comment edited in place with the URL and the console link. Each state is reported
 * once, by whichever worker process locks the preview's feedback row; a forge that fails is
 * tried again with backoff, and never fails the preview.
 */
export class PreviewFeedback {
  private openCheck: NodeJS.Timeout | undefined;
  /** What keys the marker of Slipway's comment on a pull request (commentMarker). */
  private readonly commentKey: Buffer;
  /** Where the last check of open pull requests stopped; null: from the oldest preview. */
  private openCursor: ForgeOpenedCursor | null = null;
  private readonly passes = new PeriodicPass<number>({
    run: () => this.pass(),
    onError: (err) => {
      this.log.warn({ err }, 'preview feedback: a pass failed (tried again at the next)');
      return 0;
    },
  });
  private readonly urls: ServingUrls;

  constructor(
    private readonly config: Readonly<Config>,
    private readonly dataSource: DataSource,
    private readonly secrets: SecretsCodec,
    private readonly log: Logger,
    /** Tears down previews whose pull request closed (the reconciler's delete). */
    private readonly flow: RevisionFlow,
  ) {
    this.urls = new ServingUrls(config);
    this.commentKey = deriveKey(config.secretsKey.key, 'preview-comment');
  }

  start(): void {
    this.passes.every(EVERY_MS);
    this.openCheck = setInterval(
      () =>
        void this.closeClosed().catch((err) =>
          this.log.warn({ err }, 'preview feedback: checking open pull requests failed'),
        ),
      OPEN_CHECK_MS,
    );
    this.openCheck.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.openCheck);
    await this.passes.stop();
  }

  /**
   * Asks the forge whether each forge-opened preview's pull request is still open, and tears down
   * those whose pull request closed (or is gone) although no `closed` delivery arrived. A forge
   * that cannot be asked leaves the preview as it is. Returns the previews torn down.
   */
  async closeClosed(limit = OPEN_CHECK_BATCH): Promise<string[]> {
    const closed: string[] = [];
    const providers: PassProviders = new Map();
    // A page of them per check, the next one at the next check; after the last page, from the first again.
    const page = await new PreviewRepository(this.dataSource.manager).forgeOpened(limit, this.openCursor);
    this.openCursor = page.length < limit ? null : page.at(-1)!.cursor;
    for (const preview of page) {
      if (!preview.integrationId) continue;
      let state: 'open' | 'closed' | 'gone';
      try {
        const feedback = await this.feedbackOf(preview.integrationId, providers);
        if (!feedback) continue;
        state = await feedback.pullRequestState(preview.repository, preview.number);
      } catch (err) {
        this.log.warn(
          { err, deploymentId: preview.id },
          'preview feedback: the forge could not say whether the pull request is open',
        );
        continue;
      }
      if (state === 'open') continue;
      if (
        await this.dataSource.transaction((m) =>
          beginDeploymentDelete(m, this.flow, preview.id, { previewReason: 'closed' }),
        )
      )
        closed.push(preview.id);
    }
    return closed;
  }

  /** One pass (never two at once: one asked for during a pass waits for it): the number of states reported. */
  runOnce(): Promise<number> {
    return this.passes.trigger();
  }

  private async pass(): Promise<number> {
    let told = 0;
    const providers: PassProviders = new Map();
    for (const due of await new PreviewRepository(this.dataSource.manager).feedbackDue()) {
      await new PreviewRepository(this.dataSource.manager).ensureFeedbackRow(due.deploymentId);
      const done = await this.dataSource.transaction(async (m) => {
        const previews = new PreviewRepository(m);
        if (!(await previews.lockFeedback(due.deploymentId))) return false;
        try {
          await this.tell(due, providers);
          await previews.reported(due.deploymentId, due.revisionId, due.state);
          return true;
        } catch (err) {
          this.log.warn(
            { err, deploymentId: due.deploymentId },
            'preview feedback: the forge could not be told (tried again later)',
          );
          await previews.reportFailed(
            due.deploymentId,
            due.revisionId,
            due.state,
            (err as Error).message,
            MAX_ATTEMPTS,
          );
          return false;
        }
      });
      if (done) told++;
    }
    return told;
  }

  /**
   * The forge feedback of an integration's provider, opened once per pass however many previews
   * the integration has (one that could not be opened is tried again for the next preview).
   */
  private async feedbackOf(integrationId: string, providers: PassProviders) {
    if (!providers.has(integrationId))
      providers.set(
        integrationId,
        await integrationProvider(this.config, this.dataSource, this.secrets, integrationId),
      );
    return providers.get(integrationId)?.provider.feedback;
  }

  private async tell(due: FeedbackDue, providers: PassProviders): Promise<void> {
    if (!due.integrationId) return;
    const feedback = await this.feedbackOf(due.integrationId, providers);
    if (!feedback) return;
    const repository = due.preview.repository!;
    const url = this.urls.of({
      source: due.source as DeploymentSource,
      servingPort: due.servingPort,
      edgeName: due.edgeName,
    });
    const console = `${this.config.publicUrl}/console/#/deployments/${due.deploymentId}`;
    const sha = due.preview.pull_request.head_sha;
    if (sha) await feedback.setCommitStatus(repository, sha, this.status(due, url, console));
    const lines = [
      `**Slipway preview** of \`${due.parentName}\`: ${WORDS[due.state]} (revision \`${due.revisionId.slice(0, 8)}\`, ${due.status}).`,
      '',
      ...(url && due.state === 'success' ? [`- URL: ${url}`] : []),
      `- Console: ${console}`,
      ...(due.state === 'failure' && due.statusMessage
        ? ['', `> ${due.statusMessage.replace(/\n/g, '\n> ').slice(0, 2000)}`]
        : []),
    ];
    await feedback.upsertComment(
      repository,
      due.preview.pull_request.number,
      this.commentMarker(due.parentId, due.preview.pull_request.number),
      lines.join('\n'),
    );
  }

  /**
   * What marks Slipway's comment on a pull request, found again to be edited: keyed with the
   * secrets key, so that nobody can post it before Slipway does and have Slipway edit (or fail
   * to edit) their comment instead. (A new secrets key starts a new comment.)
   */
  private commentMarker(parentId: string, number: number): string {
    const tag = createHmac('sha256', this.commentKey).update(`${parentId}:${number}`).digest('hex').slice(0, 24);
    return `<!-- slipway-preview:${parentId}:${tag} -->`;
  }

  private status(due: FeedbackDue, url: string | null, console: string): CommitStatus {
    const context = `slipway/${due.parentName}`;
    if (due.state === 'success')
      return { state: 'success', targetUrl: url ?? console, description: 'Preview deployed', context };
    if (due.state === 'failure')
      return {
        state: 'failure',
        targetUrl: console,
        description: due.statusMessage ?? `Preview ${due.status}`,
        context,
      };
    return { state: 'pending', targetUrl: console, description: `Building the preview (${due.status})`, context };
  }
}
