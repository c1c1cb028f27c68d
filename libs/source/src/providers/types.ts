import type { OutboundPolicy } from '@slipway/net';
/** One repository a repository-host integration offers to deploy (seed 2.9, without the integration id). */
export interface RepositoryEntry {
  /** Stable per repository: the host's numeric id, or (local) a hash of the path. */
  id: number;
  name: string;
  owner: string;
  /** What a deployment's `source_config.repo_url` names; what `git clone` is given. */
  url: string;
  default_branch: string;
}

/** One branch of a repository, as a host lists it (whether it is the default is the caller's to mark). */
export interface RepositoryBranch {
  name: string;
  /** The full sha of the commit the branch points at. */
  commit_sha: string;
}

/** The most branches one listing returns. */
export const MAX_BRANCHES = 100;

/**
 * How to authenticate a `git clone` of one of a provider's repositories.
 *
 * - `http-header`: send `header` (`Name: value`) with every HTTP request git makes. Pass it
 *   through the environment (`GIT_CONFIG_COUNT=1`, `GIT_CONFIG_KEY_0=http.extraHeader`,
 *   `GIT_CONFIG_VALUE_0=<header>`), never as a `-c` argument: arguments are visible to every
 *   user of the machine in the process list.
 * - `url`: clone this URL instead (credentials embedded); same caution applies.
 */
export type CloneAuth = { type: 'http-header'; header: string } | { type: 'url'; url: string };

/** A repository host behind an integration (docs/api.md, Integrations). */
export interface RepohostProvider {
  /** Every repository the integration can deploy from. Throws `ProviderError` when the host fails. */
  listRepositories(): Promise<RepositoryEntry[]>;
  /**
   * Up to MAX_BRANCHES branches of one of `listRepositories()`'s repositories (`repoUrl` is its
   * `url`), most recently committed first where the host says. Throws `ProviderError` when the host fails.
   */
  listBranches(repoUrl: string): Promise<RepositoryBranch[]>;
  /**
   * Credentials for cloning, or null when none are needed (local repositories). Async because a
   * GitHub App first exchanges its JWT for a short-lived installation token.
   */
  cloneAuth(): Promise<CloneAuth | null>;
  /**
   * Checks that `git clone <url>` stays on this provider's own transport: `local` only
   * `file://` inside its root, `github`/`gitea` only `https` (`http` for an allow-listed host)
   * to the integration's own host, at an address the outbound policy allows. Returns the one
   * protocol git may then use; throws ProviderError saying why otherwise.
   */
  checkCloneUrl(url: string): Promise<CloneProtocol>;
  /** Statuses and comments on pull requests; absent for hosts without pull requests (local). */
  readonly feedback?: PullRequestFeedback;
}

/** A commit status as forges show it beside a pull request's head. */
export interface CommitStatus {
  state: 'pending' | 'success' | 'failure';
  /** Where the status links (the preview's URL, or its page in the console). */
  targetUrl: string | null;
  /** One line (forges cut it at 140 characters). */
  description: string;
  /** The status's name on the pull request (one per deployment). */
  context: string;
}

/**
 * What Slipway says on a pull request (docs/api.md, Previews): a commit status on its head, and
 * one comment it edits in place (found again by `marker`, a hidden line in its body).
 */
export interface PullRequestFeedback {
  setCommitStatus(repository: string, sha: string, status: CommitStatus): Promise<void>;
  upsertComment(repository: string, number: number, marker: string, body: string): Promise<void>;
  /** Whether the pull request is still open (its preview's reason to exist); `gone` when the forge no longer has it. */
  pullRequestState(repository: string, number: number): Promise<'open' | 'closed' | 'gone'>;
}

/** The only transport git is allowed for one clone (GIT_ALLOW_PROTOCOL). */
export type CloneProtocol = 'https' | 'http' | 'file';

/** The host failed or refused; `message` says what it answered (never a credential). */
export class ProviderError extends Error {
  constructor(
    message: string,
    /** The host's HTTP status, when it answered. */
    readonly upstreamStatus: number | null = null,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

export const PROVIDERS = ['local', 'github', 'gitea'] as const;
export type ProviderKind = (typeof PROVIDERS)[number];

/** Options every HTTP provider takes. */
export interface HttpProviderOptions {
  /** Per request; a host slower than this is a failure. Default 10 s. */
  timeoutMs?: number;
  /** Where `api_url` may lead (config SLIPWAY_OUTBOUND_ALLOW_HOSTS); default https to public addresses only. */
  outbound?: OutboundPolicy;
}
