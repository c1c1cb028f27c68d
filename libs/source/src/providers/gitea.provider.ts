import {
  branchFrom,
  checkHostedCloneUrl,
  DEFAULT_TIMEOUT_MS,
  entryFrom,
  MAX_PAGES,
  nextLink,
  repoPathOf,
  requestJson,
  sameOrigin,
  trimSlashes,
} from './http.js';
import { forgeFeedback } from './pull-request-feedback.js';
import {
  MAX_BRANCHES,
  ProviderError,
  type CloneAuth,
  type CloneProtocol,
  type HttpProviderOptions,
  type PullRequestFeedback,
  type RepohostProvider,
  type RepositoryBranch,
  type RepositoryEntry,
} from './types.js';

const HOST = 'Gitea';
const LIMIT = 50;

export interface GiteaProviderOptions extends HttpProviderOptions {
  /** The instance's base URL (`https://gitea.example.com`); a trailing `/api/v1` is tolerated. */
  apiUrl: string;
  token: string;
}

/**
 * Gitea and Forgejo over their REST API (docs/api.md, Integrations): `GET /api/v1/user/repos`, the
 * repositories the token's user can see. Pages follow the `Link` header when the instance
 * sends one, else continue while pages come back full.
 */
export class GiteaProvider implements RepohostProvider {
  private readonly base: string;
  private readonly timeoutMs: number;
  readonly feedback: PullRequestFeedback;

  constructor(private readonly options: GiteaProviderOptions) {
    this.base = trimSlashes(options.apiUrl).replace(/\/api\/v1$/, '');
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.feedback = forgeFeedback(`${this.base}/api/v1`, (req) =>
      requestJson({
        ...req,
        host: HOST,
        headers: { Accept: 'application/json', Authorization: `token ${options.token}` },
        timeoutMs: this.timeoutMs,
        outbound: options.outbound,
      }),
    );
  }

  async listRepositories(): Promise<RepositoryEntry[]> {
    const out: RepositoryEntry[] = [];
    let url: string | null = this.pageUrl(1);
    for (let page = 1; url; page++) {
      if (page > MAX_PAGES) throw new ProviderError(`${HOST} paged past ${MAX_PAGES} pages of repositories; stopped.`);
      const res = await this.get(url);
      if (!Array.isArray(res.body))
        throw new ProviderError(`${HOST} answered ${new URL(url).pathname} without a list of repositories.`);
      for (const item of res.body) out.push(entryFrom(HOST, item));
      const link = res.headers.get('link');
      const next = nextLink(link);
      if (next) url = sameOrigin(HOST, this.base, next);
      else url = !link && res.body.length >= LIMIT ? this.pageUrl(page + 1) : null;
    }
    return out;
  }

  /** `GET /api/v1/repos/{owner}/{repo}/branches`, pages of LIMIT until MAX_BRANCHES or a short page. */
  async listBranches(repoUrl: string): Promise<RepositoryBranch[]> {
    const out: RepositoryBranch[] = [];
    for (let page = 1; out.length < MAX_BRANCHES; page++) {
      const url = `${this.base}/api/v1/repos/${repoPathOf(HOST, repoUrl)}/branches?limit=${LIMIT}&page=${page}`;
      const res = await this.get(url);
      if (!Array.isArray(res.body))
        throw new ProviderError(`${HOST} answered ${new URL(url).pathname} without a list of branches.`);
      for (const item of res.body) out.push(branchFrom(HOST, item));
      if (res.body.length < LIMIT) break;
    }
    return out.slice(0, MAX_BRANCHES);
  }

  /** A GET of Gitea's API with the token. */
  private get(url: string) {
    return requestJson({
      host: HOST,
      url,
      headers: { Accept: 'application/json', Authorization: `token ${this.options.token}` },
      timeoutMs: this.timeoutMs,
      outbound: this.options.outbound,
      unauthorized: 'the token was rejected',
    });
  }

  checkCloneUrl(url: string): Promise<CloneProtocol> {
    return checkHostedCloneUrl(HOST, this.base, url, this.options.outbound);
  }

  /** HTTP Basic with the token as password: Gitea then authenticates by the token, whatever the user name. */
  async cloneAuth(): Promise<CloneAuth> {
    return {
      type: 'http-header',
      header: `Authorization: Basic ${Buffer.from(`oauth2:${this.options.token}`).toString('base64')}`,
    };
  }

  private pageUrl(page: number): string {
    return `${this.base}/api/v1/user/repos?limit=${LIMIT}&page=${page}`;
  }
}
