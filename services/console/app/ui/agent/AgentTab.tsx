import { useState } from 'react';
import type { AgentApi, Thread } from '../../api/agent';
import type { Deployment } from '../../api/types';
import { formatTime } from '../../phases';
import { ErrorText, navigate, useLoad } from '../common';
import { agentHref, THREAD_STATUSES, threadPageHref, useAgentApi } from './agent';
import { AgentCredential } from './AgentCredential';
import { AssistantsView } from './AssistantsView';
import { CronsView } from './CronsView';
import { requestSummary } from './human-interrupt';
import { ThreadStatus } from './ThreadStatus';

/** The Agent tab's views, by their `view` in the address (threads when none). */
const VIEWS = [
  ['threads', 'Threads'],
  ['assistants', 'Assistants'],
  ['crons', 'Crons'],
] as const;

const PAGE_SIZE = 20;

/** What an interrupted thread waits on, shortened for the list. */
function waitingOn(thread: Thread): string | null {
  const values = Object.values(thread.interrupts ?? {})
    .flat()
    .map((i) => requestSummary(i.value) ?? (typeof i.value === 'string' ? i.value : JSON.stringify(i.value)));
  if (!values.length) return null;
  const text = values.join('; ');
  return text.length > 120 ? `${text.slice(0, 119)}…` : text;
}

function ThreadTable({ threads, deploymentId }: { threads: Thread[]; deploymentId: string }) {
  return (
    <div className="table-scroll" role="region" aria-label="Threads, scrollable" tabIndex={0}>
      <table className="threads">
        <caption>Threads, most recently updated first</caption>
        <thead>
          <tr>
            <th scope="col">Thread</th>
            <th scope="col">Status</th>
            <th scope="col">Waiting on</th>
            <th scope="col">Updated</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {threads.map((t) => (
            <tr key={t.thread_id} data-thread-id={t.thread_id}>
              <td>
                {/* Whole: thread ids made in the same moment share their first characters. */}
                <a href={threadPageHref(deploymentId, t.thread_id)} aria-label={`Thread ${t.thread_id}`}>
                  <code>{t.thread_id}</code>
                </a>
              </td>
              <td>
                <ThreadStatus status={t.status} />
              </td>
              <td>{waitingOn(t) ?? '—'}</td>
              <td>{formatTime(t.updated_at)}</td>
              <td>{formatTime(t.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The thread filter: a status, with the human-in-the-loop inbox one click away. */
function StatusFilter({ deploymentId, status }: { deploymentId: string; status: string }) {
  return (
    <div className="filters" role="group" aria-label="Thread filters">
      <label>
        Thread status
        <select
          value={status}
          onChange={(e) => navigate(`/deployments/${deploymentId}`, { tab: 'agent', status: e.target.value })}
        >
          {THREAD_STATUSES.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </label>
      <a
        href={agentHref(deploymentId, { status: 'interrupted' })}
        aria-current={status === 'interrupted' ? 'page' : undefined}
        className="inbox-link"
      >
        Waiting for a human
      </a>
      {status && <a href={agentHref(deploymentId)}>All threads</a>}
    </div>
  );
}

/**
 * A deployment's Agent tab (docs/console.md, Agent): its threads (the default view), assistants
 * and crons, read from the deployment's agent through the api with the user's key (and the
 * agent's own credential, when the user gave one).
 */
export function AgentTab({ deployment, query }: { deployment: Deployment & { url: string }; query: URLSearchParams }) {
  const [credentialVersion, setCredentialVersion] = useState(0);
  const agent = useAgentApi(deployment.id, true, credentialVersion) as AgentApi;
  const view = query.get('view') ?? 'threads';
  return (
    <>
      <nav className="subtabs" aria-label="Agent views">
        {VIEWS.map(([id, label]) => (
          <a
            key={id}
            href={agentHref(deployment.id, id === 'threads' ? {} : { view: id })}
            aria-current={view === id ? 'page' : undefined}
          >
            {label}
          </a>
        ))}
      </nav>
      <AgentCredential deploymentId={deployment.id} onChange={() => setCredentialVersion((v) => v + 1)} />
      {view === 'assistants' ? (
        <AssistantsView agent={agent} />
      ) : view === 'crons' ? (
        <CronsView agent={agent} />
      ) : (
        <ThreadsView agent={agent} deployment={deployment} query={query} />
      )}
    </>
  );
}

/**
 * The agent's threads, newest first, a page at a time, filtered by status
 * (`?tab=agent&status=interrupted` is the inbox of threads waiting for a human).
 */
function ThreadsView({
  agent,
  deployment,
  query,
}: {
  agent: AgentApi;
  deployment: Deployment & { url: string };
  query: URLSearchParams;
}) {
  const status = query.get('status') ?? '';
  const offset = Math.max(0, Number(query.get('offset')) || 0);
  // One more than a page: whether there is a next page, without counting them all.
  const threads = useLoad(
    (signal) => agent.searchThreads({ status, limit: PAGE_SIZE + 1, offset }, signal),
    [agent, status, offset],
  );
  const page = threads.data?.slice(0, PAGE_SIZE) ?? [];
  const title = status === 'interrupted' ? 'Waiting for a human' : 'Threads';
  return (
    <section aria-labelledby="threads-title" className="agent-threads">
      <h2 id="threads-title">{title}</h2>
      <p className="hint">
        Read from the deployment's agent through Slipway's API, with your API key (as a call to{' '}
        <code>{deployment.url}</code> would be).
      </p>
      <StatusFilter deploymentId={deployment.id} status={status} />
      <ErrorText error={threads.error} />
      {!threads.data ? (
        !threads.error && <p role="status">Loading threads…</p>
      ) : !page.length ? (
        <p className="empty-state">
          {status === 'interrupted'
            ? 'No thread is waiting for a human.'
            : status
              ? `No ${status} threads.`
              : 'No threads yet.'}
        </p>
      ) : (
        <ThreadTable threads={page} deploymentId={deployment.id} />
      )}
      {(offset > 0 || (threads.data?.length ?? 0) > PAGE_SIZE) && (
        <nav className="pager" aria-label="Thread pages">
          {offset > 0 && (
            <a href={agentHref(deployment.id, { status, offset: Math.max(0, offset - PAGE_SIZE) })}>Newer threads</a>
          )}
          {(threads.data?.length ?? 0) > PAGE_SIZE && (
            <a href={agentHref(deployment.id, { status, offset: offset + PAGE_SIZE })}>Older threads</a>
          )}
        </nav>
      )}
    </section>
  );
}
