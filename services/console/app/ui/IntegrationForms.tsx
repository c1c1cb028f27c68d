import { useState, type FormEvent } from 'react';
import type { CreatedIntegration, Integration, Repository } from '../api/types';
import { ActionOutcome, CopyButton, Field, SelectField, useAction } from './ApiCall';
import { localPushHook } from './push-hook';

const PROVIDERS = [
  ['local', 'local (git repositories on the server)'],
  ['github', 'GitHub'],
  ['gitea', 'Gitea or Forgejo'],
] as const;
type Provider = (typeof PROVIDERS)[number][0];

const GITHUB_AUTH = [
  ['token', 'A personal access token'],
  ['app', 'A GitHub App installation'],
] as const;
type GitHubAuth = (typeof GITHUB_AUTH)[number][0];

interface Draft {
  provider: Provider;
  name: string;
  root: string;
  apiUrl: string;
  token: string;
  githubAuth: GitHubAuth;
  appId: string;
  privateKey: string;
  installationId: string;
}

const EMPTY: Draft = {
  provider: 'local',
  name: '',
  root: '',
  apiUrl: '',
  token: '',
  githubAuth: 'token',
  appId: '',
  privateKey: '',
  installationId: '',
};

/** The `config` of POST /v1/integrations/repohost for `d` (docs/api.md, Integrations). */
function configOf(d: Draft): Record<string, unknown> {
  if (d.provider === 'local') return { root: d.root };
  if (d.provider === 'gitea') return { api_url: d.apiUrl, token: d.token };
  const apiUrl = d.apiUrl ? { api_url: d.apiUrl } : {};
  if (d.githubAuth === 'token') return { ...apiUrl, token: d.token };
  const appId = /^\d+$/.test(d.appId) ? Number(d.appId) : d.appId;
  return { ...apiUrl, app_id: appId, private_key: d.privateKey, installation_id: Number(d.installationId) };
}

/**
 * The webhook URL and secret of a just-created integration: shown this once. A `local` one has
 * no host to call the webhook, so it also gets the git hook that does (with the secret in it).
 */
function WebhookShownOnce({ created }: { created: CreatedIntegration }) {
  const local = created.provider === 'local';
  const hook = local ? localPushHook(created.name, created.webhook_url, created.webhook_secret) : '';
  return (
    <div className="notice" role="status" aria-label={`Webhook of ${created.name}`}>
      {local ? (
        <p>
          Connected {created.name}. Its repositories have no host to send push events: for <em>Build on push</em>,
          install the hook below in each repository as <code>.git/hooks/post-commit</code> (or{' '}
          <code>hooks/post-receive</code> in one you push to), made executable. It calls the webhook URL, signed with
          the secret. The secret is shown only now: copy it, or the hook, before leaving this page.
        </p>
      ) : (
        <p>
          Connected {created.name}. Add this webhook on the repository host, content type <code>application/json</code>,
          with the events <strong>Pushes</strong> and <strong>Pull requests</strong> ticked. The secret is shown only
          now: copy it before leaving this page.
        </p>
      )}
      <dl>
        <dt>Webhook URL</dt>
        <dd>
          <code>{created.webhook_url}</code> <CopyButton text={created.webhook_url} label="Copy webhook URL" />
        </dd>
        <dt>Webhook secret</dt>
        <dd>
          <code>{created.webhook_secret}</code> <CopyButton text={created.webhook_secret} label="Copy webhook secret" />
        </dd>
        {local && (
          <>
            <dt>Push hook</dt>
            <dd>
              <pre aria-label="Push hook" tabIndex={0}>
                {hook}
              </pre>
              <CopyButton text={hook} label="Copy push hook" />
            </dd>
          </>
        )}
      </dl>
    </div>
  );
}

/** "Connect a repository host": POST /v1/integrations/repohost (admin keys only; the API says so otherwise). */
export function ConnectIntegration({ onCreated }: { onCreated: () => void }) {
  const action = useAction();
  const [d, setD] = useState<Draft>(EMPTY);
  const [created, setCreated] = useState<CreatedIntegration | null>(null);
  const set = (patch: Partial<Draft>) => setD({ ...d, ...patch });
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setCreated(null);
    const made = await action.perform((call) =>
      call<CreatedIntegration>('POST', '/v1/integrations/repohost', {
        provider: d.provider,
        name: d.name,
        config: configOf(d),
      }),
    );
    if (!made) return;
    setCreated(made);
    setD(EMPTY);
    onCreated();
  };
  const text = (
    label: string,
    name: string,
    key: keyof Draft,
    extra: { hint?: string; type?: string; required?: boolean } = {},
  ) => (
    <Field
      label={label}
      name={name}
      action={action}
      hint={extra.hint}
      render={(ids) => (
        <input
          {...ids}
          type={extra.type ?? 'text'}
          required={extra.required}
          autoComplete="off"
          value={d[key]}
          onChange={(e) => set({ [key]: e.target.value } as Partial<Draft>)}
        />
      )}
    />
  );
  return (
    <form className="form" onSubmit={submit} aria-labelledby="connect-integration-title">
      <h3 id="connect-integration-title">Connect a repository host</h3>
      <SelectField
        label="Provider"
        name="provider"
        action={action}
        value={d.provider}
        options={PROVIDERS}
        onChange={(provider) => set({ provider })}
      />
      {text('Name', 'name', 'name', { hint: 'Letters, digits, . _ -; unique in the workspace.', required: true })}
      {d.provider === 'local' &&
        text('Repositories directory', 'config.root', 'root', {
          hint: 'Absolute path on the server, under its SLIPWAY_LOCAL_REPOS_ROOT; each git repository directly in it is offered.',
          required: true,
        })}
      {d.provider === 'gitea' &&
        text('API URL', 'config.api_url', 'apiUrl', {
          hint: 'The instance, e.g. https://gitea.example.com',
          required: true,
        })}
      {d.provider === 'github' && (
        <>
          {text('API URL', 'config.api_url', 'apiUrl', {
            hint: 'Empty: https://api.github.com (GitHub Enterprise: https://<host>/api/v3).',
          })}
          <SelectField
            label="Authenticate with"
            name="config"
            action={action}
            value={d.githubAuth}
            options={GITHUB_AUTH}
            onChange={(githubAuth) => set({ githubAuth })}
          />
        </>
      )}
      {(d.provider === 'gitea' || (d.provider === 'github' && d.githubAuth === 'token')) &&
        text('Token', 'config.token', 'token', {
          type: 'password',
          hint: 'Write-only: never shown again.',
          required: true,
        })}
      {d.provider === 'github' && d.githubAuth === 'app' && (
        <>
          {text('App ID', 'config.app_id', 'appId', { required: true })}
          {text('Installation ID', 'config.installation_id', 'installationId', { required: true })}
          <Field
            label="Private key (PEM)"
            name="config.private_key"
            action={action}
            hint="The .pem file GitHub generated for the App; write-only."
            render={(ids) => (
              <textarea
                {...ids}
                required
                rows={4}
                value={d.privateKey}
                onChange={(e) => set({ privateKey: e.target.value })}
              />
            )}
          />
        </>
      )}
      <div>
        <button type="submit" className="primary" disabled={action.busy}>
          {action.busy ? 'Connecting…' : 'Connect'}
        </button>
      </div>
      <ActionOutcome action={action} />
      {created && <WebhookShownOnce created={created} />}
    </form>
  );
}

/** "Test connection": lists the integration's repositories now and says how many answered, or what the host said. */
export function TestConnection({ integration }: { integration: Integration }) {
  const action = useAction();
  const [count, setCount] = useState<number | null>(null);
  const test = async () => {
    setCount(null);
    const repos = await action.perform((call) =>
      call<Repository[]>('GET', `/v1/integrations/repohost/${integration.id}/repos`),
    );
    if (repos) setCount(repos.length);
  };
  return (
    <div className="actions">
      <button
        type="button"
        className="secondary"
        disabled={action.busy}
        onClick={test}
        aria-label={`Test connection of ${integration.name}`}
      >
        {action.busy ? 'Testing…' : 'Test connection'}
      </button>
      <span role="status">
        {count !== null && !action.error ? `${count} ${count === 1 ? 'repository' : 'repositories'} reachable` : ''}
      </span>
      <ActionOutcome action={action} />
    </div>
  );
}
