import type { Api } from '../api/client';
import type { Envelope, Integration, Listener, Repository } from '../api/types';
import { ago, formatTime } from '../phases';
import { ErrorText, PageHeading, useApi, useLoad } from './common';
import { ConnectIntegration, TestConnection } from './IntegrationForms';
import { CreateListener, ListenerActions } from './ListenerForms';

/** A listener that has not called in for this long is marked stale. */
export const STALE_AFTER_MS = 5 * 60_000;

async function loadIntegrations(api: Api, signal: AbortSignal) {
  const page = await api.get<Envelope<Integration>>('/v1/integrations/repohost', { limit: 100 }, signal);
  return Promise.all(
    page.resources.map(async (integration) => {
      try {
        const repos = await api.get<Repository[]>(
          `/v1/integrations/repohost/${integration.id}/repos`,
          undefined,
          signal,
        );
        return { integration, repos, error: null };
      } catch (err) {
        return { integration, repos: [] as Repository[], error: (err as Error).message };
      }
    }),
  );
}

export function ListenersPage() {
  const api = useApi();
  const listeners = useLoad((signal) => api.get<Envelope<Listener>>('/v2/listeners', { limit: 100 }, signal), [api]);
  const integrations = useLoad((signal) => loadIntegrations(api, signal), [api]);
  const now = Date.now();
  return (
    <>
      <PageHeading>Listeners and integrations</PageHeading>
      <section aria-labelledby="listeners-title">
        <h2 id="listeners-title">Listeners</h2>
        <ErrorText error={listeners.error} />
        <CreateListener onCreated={listeners.reload} />
        <div className="table-scroll" role="region" aria-label="Listeners, scrollable" tabIndex={0}>
          <table>
            <caption>
              Agents in your clusters; one that has not called in for {STALE_AFTER_MS / 60_000} minutes is stale.
            </caption>
            <thead>
              <tr>
                <th scope="col">Compute ID</th>
                <th scope="col">Namespaces</th>
                <th scope="col">Version</th>
                <th scope="col">Last seen</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {(listeners.data?.resources ?? []).map((l) => {
                const stale = !l.last_seen_at || now - Date.parse(l.last_seen_at) > STALE_AFTER_MS;
                return (
                  <tr key={l.id} data-listener-id={l.id} className={stale ? 'stale' : undefined}>
                    <th scope="row">{l.compute_id}</th>
                    <td>{l.compute_config?.k8s_namespaces?.join(', ') || 'all'}</td>
                    <td>{l.version ?? '—'}</td>
                    <td>
                      {l.last_seen_at ? (
                        <time dateTime={l.last_seen_at} title={formatTime(l.last_seen_at)}>
                          {ago(l.last_seen_at, now)}
                        </time>
                      ) : (
                        'never'
                      )}
                      {stale && <span className="badge badge-failed stale-mark">stale</span>}
                    </td>
                    <td>
                      <ListenerActions listener={l} onChanged={listeners.reload} />
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      </section>
      <section aria-labelledby="integrations-title">
        <h2 id="integrations-title">Integrations</h2>
        <ErrorText error={integrations.error} />
        <ConnectIntegration onCreated={integrations.reload} />
        {(integrations.data ?? []).length === 0 && !integrations.error && <p>No integrations.</p>}
        {(integrations.data ?? []).map(({ integration, repos, error }) => (
          <article key={integration.id} className="integration" aria-labelledby={`int-${integration.id}`}>
            <h3 id={`int-${integration.id}`}>
              {integration.name} <span className="note">({integration.provider})</span>
            </h3>
            {integration.webhook_url && (
              <p className="hint">
                Webhook URL <code>{integration.webhook_url}</code>
              </p>
            )}
            <TestConnection integration={integration} />
            <ErrorText error={error} />
            {repos.length ? (
              <ul>
                {repos.map((r) => (
                  <li key={String(r.id)}>
                    <code>
                      {r.owner}/{r.name}
                    </code>{' '}
                    {r.default_branch ? `(default branch ${r.default_branch})` : ''}
                  </li>
                ))}
              </ul>
            ) : (
              !error && <p>No repositories.</p>
            )}
          </article>
        ))}
      </section>
    </>
  );
}
