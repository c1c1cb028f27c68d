import { requestJson, type HostRequest } from './http.js';
import { ProviderError, type CommitStatus, type PullRequestFeedback } from './types.js';

/** How far comment pages are read looking for ours: a pull request with more is a rare one. */
const COMMENT_PAGES = 10;
const PER_PAGE = 50;

/** `owner/name`, each part a forge's name characters only: nothing else reaches a request path. */
function repoPath(repository: string): string {
  if (!/^[\w.-]+\/[\w.-]+$/.test(repository)) throw new Error(`'${repository}' is not an owner/name repository.`);
  return repository.split('/').map(encodeURIComponent).join('/');
}

/**
 * Commit statuses and one comment per pull request through the REST API GitHub and Gitea share
 * in shape (`/repos/{owner}/{repo}/statuses/{sha}`, `/repos/{owner}/{repo}/issues/{n}/comments`,
 * `/repos/{owner}/{repo}/issues/comments/{id}`), under `apiBase` (GitHub's API root, Gitea's
 * `/api/v1`), with the provider's own request settings and credentials.
 */
export function forgeFeedback(
  apiBase: string,
  request: (req: Omit<HostRequest, 'host' | 'timeoutMs' | 'outbound' | 'headers'>) => Promise<{ body: unknown }>,
): PullRequestFeedback {
  return {
    async setCommitStatus(repository: string, sha: string, status: CommitStatus): Promise<void> {
      if (!/^[0-9a-f]{7,64}$/.test(sha)) throw new Error(`'${sha}' is not a commit id.`);
      await request({
        method: 'POST',
        url: `${apiBase}/repos/${repoPath(repository)}/statuses/${sha}`,
        json: {
          state: status.state,
          target_url: status.targetUrl ?? undefined,
          description: status.description.slice(0, 140),
          context: status.context,
        },
      });
    },

    async upsertComment(repository: string, number: number, marker: string, body: string): Promise<void> {
      const base = `${apiBase}/repos/${repoPath(repository)}/issues`;
      const text = `${body}\n\n${marker}`;
      for (let page = 1; page <= COMMENT_PAGES; page++) {
        const { body: comments } = await request({
          url: `${base}/${number}/comments?per_page=${PER_PAGE}&limit=${PER_PAGE}&page=${page}`,
        });
        if (!Array.isArray(comments)) break;
        const ours = comments.find(
          (c) =>
            typeof c?.body === 'string' &&
            c.body.includes(marker) &&
            (typeof c.id === 'number' || typeof c.id === 'string'),
        );
        if (ours) {
          await request({
            method: 'PATCH',
            url: `${base}/comments/${encodeURIComponent(String(ours.id))}`,
            json: { body: text },
          });
          return;
        }
        if (comments.length < PER_PAGE) break;
      }
      await request({ method: 'POST', url: `${base}/${number}/comments`, json: { body: text } });
    },

    async pullRequestState(repository: string, number: number): Promise<'open' | 'closed' | 'gone'> {
      try {
        const { body } = await request({ url: `${apiBase}/repos/${repoPath(repository)}/pulls/${number}` });
        const state = (body as { state?: unknown } | null)?.state;
        return state === 'open' ? 'open' : 'closed';
      } catch (err) {
        if (err instanceof ProviderError && (err.upstreamStatus === 404 || err.upstreamStatus === 410)) return 'gone';
        throw err;
      }
    },
  };
}
