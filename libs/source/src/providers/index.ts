import { GiteaProvider } from './gitea.provider.js';
import { GitHubProvider } from './github.provider.js';
import { LocalProvider } from './local.provider.js';
import type { HttpProviderOptions, RepohostProvider } from './types.js';

export { GiteaProvider, type GiteaProviderOptions } from './gitea.provider.js';
export {
  appJwt,
  GITHUB_API_URL,
  GitHubProvider,
  type GitHubAuth,
  type GitHubProviderOptions,
} from './github.provider.js';
export { normalizeRepoUrl } from './repo-url.js';
export { isWithin, LocalProvider, localRepositoryId, type LocalProviderOptions } from './local.provider.js';
export {
  MAX_BRANCHES,
  PROVIDERS,
  ProviderError,
  type CloneAuth,
  type CloneProtocol,
  type CommitStatus,
  type HttpProviderOptions,
  type PullRequestFeedback,
  type ProviderKind,
  type RepohostProvider,
  type RepositoryBranch,
  type RepositoryEntry,
} from './types.js';

/**
 * An integration as providers need it: its stored non-secret `config` and its opened
 * `credentials`. Whoever holds the sealed row (api, builder) opens the credentials first.
 */
export type ProviderSpec =
  | { provider: 'local'; name: string; config: { root: string }; credentials?: null }
  | {
      provider: 'github';
      name: string;
      config: { api_url?: string; app_id?: string | number; installation_id?: number };
      credentials: { token?: string; private_key?: string } | null;
    }
  | { provider: 'gitea'; name: string; config: { api_url: string }; credentials: { token?: string } | null };

export interface CreateProviderOptions extends HttpProviderOptions {
  /** `local` roots must lie under this directory (SLIPWAY_LOCAL_REPOS_ROOT). */
  localReposRoot?: string;
}

/** The provider for an integration. Throws when its credentials do not fit its kind. */
export function createRepohostProvider(spec: ProviderSpec, options: CreateProviderOptions = {}): RepohostProvider {
  const http = { timeoutMs: options.timeoutMs, outbound: options.outbound };
  switch (spec.provider) {
    case 'local':
      return new LocalProvider({ root: spec.config.root, owner: spec.name, allowedRoot: options.localReposRoot });
    case 'github': {
      const { token, private_key: privateKey } = spec.credentials ?? {};
      const { app_id: appId, installation_id: installationId } = spec.config;
      if (token) return new GitHubProvider({ ...http, apiUrl: spec.config.api_url, auth: { token } });
      if (privateKey && appId !== undefined && installationId !== undefined) {
        return new GitHubProvider({
          ...http,
          apiUrl: spec.config.api_url,
          auth: { appId, privateKey, installationId },
        });
      }
      throw new Error('A github integration needs a token, or app_id, installation_id and private_key.');
    }
    case 'gitea':
      if (!spec.credentials?.token) throw new Error('A gitea integration needs a token.');
      return new GiteaProvider({ ...http, apiUrl: spec.config.api_url, token: spec.credentials.token });
  }
}
