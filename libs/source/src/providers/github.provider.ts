import { createPrivateKey } from 'node:crypto';
import { SignJWT } from 'jose';
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

export const GITHUB_API_URL = 'https://api.github.com';
const HOST = 'GitHub';
const PER_PAGE = 100;
/** GitHub refuses App JWTs that live longer than 10 minutes; clocks drift, so back-date a minute. */
const JWT_BACKDATE_S = 60;
const JWT_LIFETIME_S = 9 * 60;
/** An installation token is reused until this close to its expiry. */
const TOKEN_REFRESH_MARGIN_MS = 5 * 60_000;

export type GitHubAuth =
  /** A personal access token (classic or fine-grained) or any OAuth token. */
  | { token: string }
  /** A GitHub App installation: the App's JWT is exchanged for an installation token. */
  | { appId: string | number; privateKey: string; installationId: number };

export interface GitHubProviderOptions extends HttpProviderOptions {
  /** Default https://api.github.com; GitHub Enterprise Server: `https://<host>/api/v3`. */
  apiUrl?: string;
  auth: GitHubAuth;
}

/**
 * GitHub over its REST API (docs/api.md, Integrations): with a token, the repositories of `GET /user/repos`;
 * as a GitHub App, those of `GET /installation/repositories` under an installation token.
 * Both are paged through the `Link` header.
 */
export class GitHubProvider implements RepohostProvider {
  private readonly apiUrl: string;
  private readonly timeoutMs: number;
  private installationToken: { token: string; expiresAt: number } | null = null;
  readonly feedback: PullRequestFeedback;

  constructor(private readonly options: GitHubProviderOptions) {
    this.apiUrl = trimSlashes(options.apiUrl ?? GITHUB_API_URL);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.feedback = forgeFeedback(this.apiUrl, async (req) =>
      requestJson({
        ...req,
        host: HOST,
        headers: this.headers(`Bearer ${await this.accessToken()}`),
        timeoutMs: this.timeoutMs,
        outbound: this.options.outbound,
      }),
    );
  }

  async listRepositories(): Promise<RepositoryEntry[]> {
    const app = 'appId' in this.options.auth;
    const token = await this.accessToken();
    let url: string | null = app
      ? `${this.apiUrl}/installation/repositories?per_page=${PER_PAGE}`
      : `${this.apiUrl}/user/repos?per_page=${PER_PAGE}&page=1`;
    const out: RepositoryEntry[] = [];
    for (let page = 0; url; page++) {
      if (page === MAX_PAGES)
        throw new ProviderError(`${HOST} paged past ${MAX_PAGES} pages of repositories; stopped.`);
      const res = await requestJson({
        host: HOST,
        url,
        headers: this.headers(`Bearer ${token}`),
        timeoutMs: this.timeoutMs,
        outbound: this.options.outbound,
        unauthorized: app ? 'the installation token was rejected' : 'the token was rejected',
      });
      const items = app ? (res.body as { repositories?: unknown })?.repositories : res.body;
      if (!Array.isArray(items))
        throw new ProviderError(`${HOST} answered ${new URL(url).pathname} without a list of repositories.`);
      for (const item of items) out.push(entryFrom(HOST, item));
      const next = nextLink(res.headers.get('link'));
      url = next ? sameOrigin(HOST, this.apiUrl, next) : null;
    }
    return out;
  }

  /** `GET /repos/{owner}/{repo}/branches`: one page of up to 100 (GitHub's own order, by name). */
  async listBranches(repoUrl: string): Promise<RepositoryBranch[]> {
    const url = `${this.apiUrl}/repos/${repoPathOf(HOST, repoUrl)}/branches?per_page=${MAX_BRANCHES}`;
    const res = await requestJson({
      host: HOST,
      url,
      headers: this.headers(`Bearer ${await this.accessToken()}`),
      timeoutMs: this.timeoutMs,
      outbound: this.options.outbound,
      unauthorized: 'appId' in this.options.auth ? 'the installation token was rejected' : 'the token was rejected',
    });
    if (!Array.isArray(res.body))
      throw new ProviderError(`${HOST} answered ${new URL(url).pathname} without a list of branches.`);
    return res.body.slice(0, MAX_BRANCHES).map((item) => branchFrom(HOST, item));
  }

  checkCloneUrl(url: string): Promise<CloneProtocol> {
    return checkHostedCloneUrl(HOST, this.apiUrl, url, this.options.outbound);
  }

  /** HTTP Basic with `x-access-token`, which GitHub's git endpoints accept for every token kind. */
  async cloneAuth(): Promise<CloneAuth> {
    const token = await this.accessToken();
    return {
      type: 'http-header',
      header: `Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`,
    };
  }

  /** The token, or (App) a current installation token, exchanged when missing or about to expire. */
  private async accessToken(): Promise<string> {
    const auth = this.options.auth;
    if ('token' in auth) return auth.token;
    if (this.installationToken && this.installationToken.expiresAt - TOKEN_REFRESH_MARGIN_MS > Date.now()) {
      return this.installationToken.token;
    }
    const jwt = await appJwt(auth.appId, auth.privateKey);
    const res = await requestJson({
      host: HOST,
      method: 'POST',
      url: `${this.apiUrl}/app/installations/${encodeURIComponent(String(auth.installationId))}/access_tokens`,
      headers: this.headers(`Bearer ${jwt}`),
      timeoutMs: this.timeoutMs,
      outbound: this.options.outbound,
      unauthorized: "the GitHub App's JWT was rejected (check app_id and private_key)",
    });
    const body = res.body as { token?: unknown; expires_at?: unknown };
    if (typeof body?.token !== 'string' || !body.token) {
      throw new ProviderError(`${HOST} answered the installation token exchange without a token.`);
    }
    const expiresAt = typeof body.expires_at === 'string' ? Date.parse(body.expires_at) : NaN;
    this.installationToken = {
      token: body.token,
      expiresAt: Number.isFinite(expiresAt) ? expiresAt : Date.now() + 30 * 60_000,
    };
    return body.token;
  }

  private headers(authorization: string): Record<string, string> {
    return {
      Accept: 'application/vnd.github+json',
      'X-GitHub-Api-Version': '2022-11-28',
      // GitHub rejects API requests without a User-Agent.
      'User-Agent': 'slipway',
      Authorization: authorization,
    };
  }
}

/**
 * The RS256 JWT a GitHub App authenticates as: `iss` is the App ID (or client ID). GitHub
 * hands out PKCS#1 keys (`BEGIN RSA PRIVATE KEY`), which jose's importPKCS8 refuses; node's
 * createPrivateKey reads both that and PKCS#8.
 */
export async function appJwt(appId: string | number, privateKeyPem: string): Promise<string> {
  let key;
  try {
    key = createPrivateKey(privateKeyPem);
  } catch {
    // Never echo the key, not even in part.
    throw new ProviderError('The GitHub App private_key is not a readable PEM private key.');
  }
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
    .setIssuer(String(appId))
    .setIssuedAt(now - JWT_BACKDATE_S)
    .setExpirationTime(now + JWT_LIFETIME_S)
    .sign(key);
}
