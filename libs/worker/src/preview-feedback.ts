import { ServingUrls, type Config } from '@slipway/config';
import type { SecretsCodec } from '@slipway/crypto';
import { PreviewRepository, type DataSource, type FeedbackDue } from '@slipway/db';
import type { DeploymentSource } from '@slipway/domain';
import type { Logger } from '@slipway/logging';
import type { CommitStatus } from '@slipway/source';
import { integrationProvider } from './integration-provider.js';

/** How often forge-opened previews are looked at. */
const EVERY_MS = 3_000;
/** A state the forge would not take after this many tries is given up (its error kept). */
const MAX_ATTEMPTS = 5;

const WORDS = { pending: 'building', success: 'deployed', failure: 'failed' } as const;

/**
 * Tells pull requests about their previews (docs/api.md, Previews): for each preview a forge
 * opened, a commit status on the pull request's head (pending while its latest revision builds
 * and rolls out, success with the preview's URL, failure with the revision's `status_message`)
 * and one comment edited in place with the URL and the console link. Each state is reported
 * once, by whichever worker process locks the preview's feedback row; a forge that fails is
 * tried again with backoff, and never fails the preview.
 */
export class PreviewFeedback {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | null = null;
  private readonly urls: ServingUrls;

  constructor(
    private readonly config: Readonly<Config>,
    private readonly dataSource: DataSource,
    private readonly secrets: SecretsCodec,
    private readonly log: Logger,
  ) {
    this.urls = new ServingUrls(config);
  }

  start(): void {
    this.timer = setInterval(() => void this.runOnce(), EVERY_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One pass (never two at once): the number of states reported. */
  runOnce(): Promise<number> {
    this.running ??= this.pass()
      .catch((err) => {
        this.log.warn({ err }, 'preview feedback: a pass failed (tried again at the next)');
        return 0;
      })
      .finally(() => (this.running = null));
    return this.running;
  }

  private async pass(): Promise<number> {
    let told = 0;
    for (const due of await new PreviewRepository(this.dataSource.manager).feedbackDue()) {
      await new PreviewRepository(this.dataSource.manager).ensureFeedbackRow(due.deploymentId);
      const done = await this.dataSource.transaction(async (m) => {
        const previews = new PreviewRepository(m);
        if (!(await previews.lockFeedback(due.deploymentId))) return false;
        try {
          await this.tell(due);
          await previews.reported(due.deploymentId, due.revisionId, due.state);
          return true;
        } catch (err) {
          this.log.warn({ err, deploymentId: due.deploymentId }, 'preview feedback: the forge could not be told (tried again later)');
          await previews.reportFailed(due.deploymentId, due.revisionId, due.state, (err as Error).message, MAX_ATTEMPTS);
          return false;
        }
      });
      if (done) told++;
    }
    return told;
  }

  private async tell(due: FeedbackDue): Promise<void> {
    if (!due.integrationId) return;
    const found = await integrationProvider(this.config, this.dataSource, this.secrets, due.integrationId);
    const feedback = found?.provider.feedback;
    if (!feedback) return;
    const repository = due.preview.repository!;
    const url = this.urls.of({ source: due.source as DeploymentSource, servingPort: due.servingPort, edgeName: due.edgeName });
    const console = `${this.config.publicUrl}/console/#/deployments/${due.deploymentId}`;
    const sha = due.preview.pull_request.head_sha;
    if (sha) await feedback.setCommitStatus(repository, sha, this.status(due, url, console));
    const lines = [
      `**Slipway preview** of \`${due.parentName}\`: ${WORDS[due.state]} (revision \`${due.revisionId.slice(0, 8)}\`, ${due.status}).`,
      '',
      ...(url && due.state === 'success' ? [`- URL: ${url}`] : []),
      `- Console: ${console}`,
      ...(due.state === 'failure' && due.statusMessage ? ['', `> ${due.statusMessage.replace(/\n/g, '\n> ').slice(0, 2000)}`] : []),
    ];
    await feedback.upsertComment(repository, due.preview.pull_request.number, `<!-- slipway-preview:${due.parentId} -->`, lines.join('\n'));
  }

  private status(due: FeedbackDue, url: string | null, console: string): CommitStatus {
    const context = `slipway/${due.parentName}`;
    if (due.state === 'success') return { state: 'success', targetUrl: url ?? console, description: 'Preview deployed', context };
    if (due.state === 'failure') return { state: 'failure', targetUrl: console, description: due.statusMessage ?? `Preview ${due.status}`, context };
    return { state: 'pending', targetUrl: console, description: `Building the preview (${due.status})`, context };
  }
}
