import { useEffect, useState } from 'react';
import { pendingInterrupts, type AgentApi, type AgentRun, type Thread, type ThreadState } from '../../api/agent';
import type { Deployment } from '../../api/types';
import { formatTime } from '../../phases';
import { CopyButton } from '../ApiCall';
import { ErrorText, PageHeading, useApi, useLoad } from '../common';
import { filtersToQuery, NO_FILTERS } from '../traces/filters';
import { tracesHref } from '../traces/TracesTab';
import { agentHref, jsonText, useAgentApi } from './agent';
import { DeleteThread } from './DeleteThread';
import { CheckpointHistory, ThreadRuns } from './ThreadHistory';
import { ThreadInterrupts } from './ThreadInterrupts';
import { ThreadStatus } from './ThreadStatus';

const HISTORY_SIZE = 50;
const RUNS_SIZE = 20;
/** How often a busy thread (a run going on) is read again. */
const POLL_MS = 1_000;

interface ThreadData {
  thread: Thread;
  state: ThreadState;
  history: ThreadState[];
  runs: AgentRun[];
}

async function loadThread(agent: AgentApi, threadId: string, signal: AbortSignal): Promise<ThreadData> {
  const [thread, state, history, runs] = await Promise.all([
    agent.thread(threadId, signal),
    agent.state(threadId, signal),
    agent.history(threadId, HISTORY_SIZE, signal),
    agent.runs(threadId, RUNS_SIZE, signal),
  ]);
  return { thread, state, history, runs };
}

/** The assistant the thread's runs use: its metadata's, else its latest run's, else its graph's (an assistant id too). */
function assistantOf(data: ThreadData): string | null {
  const meta = data.thread.metadata ?? {};
  const named = meta.assistant_id ?? data.runs[0]?.assistant_id ?? meta.graph_id;
  return typeof named === 'string' && named ? named : null;
}

function ThreadView({ agent, deploymentId, threadId }: { agent: AgentApi; deploymentId: string; threadId: string }) {
  const data = useLoad((signal) => loadThread(agent, threadId, signal), [agent, threadId]);
  const [notice, setNotice] = useState<string | null>(null);
  const busy =
    !!data.data &&
    (data.data.thread.status === 'busy' ||
      data.data.runs.some((r) => r.status === 'pending' || r.status === 'running'));
  // While a run goes on (one just resumed), read again until it ends.
  useEffect(() => {
    if (!busy || data.loading) return;
    const timer = setTimeout(data.reload, POLL_MS);
    return () => clearTimeout(timer);
  }, [busy, data.loading, data.data, data.reload]);

  if (!data.data) return data.error ? <ErrorText error={data.error} /> : <p role="status">Loading the thread…</p>;
  const { thread, state, history, runs } = data.data;
  const interrupts = thread.status === 'interrupted' ? pendingInterrupts(state, thread) : [];
  return (
    <>
      <ErrorText error={data.error} />
      {notice && (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      <section aria-labelledby="thread-facts-title">
        <h2 id="thread-facts-title" className="visually-hidden">
          About this thread
        </h2>
        <dl className="config">
          <div>
            <dt>Status</dt>
            <dd>
              <ThreadStatus status={thread.status} label="Thread status" />
            </dd>
          </div>
          <div>
            <dt>Updated</dt>
            <dd>{formatTime(thread.updated_at)}</dd>
          </div>
          <div>
            <dt>Created</dt>
            <dd>{formatTime(thread.created_at)}</dd>
          </div>
          <div className="wide">
            <dt>Thread id</dt>
            <dd>
              <code>{thread.thread_id}</code> <CopyButton text={thread.thread_id} label="Copy thread id" />{' '}
              <a href={tracesHref(deploymentId, filtersToQuery({ ...NO_FILTERS, thread: thread.thread_id }))}>
                Traces of this thread
              </a>
            </dd>
          </div>
        </dl>
      </section>
      {interrupts.length > 0 && (
        <ThreadInterrupts
          agent={agent}
          threadId={threadId}
          assistantId={assistantOf(data.data)}
          interrupts={interrupts}
          onResumed={(message) => {
            setNotice(message);
            data.reload();
          }}
        />
      )}
      <section aria-labelledby="state-title">
        <h2 id="state-title">State</h2>
        <p>{state.next.length ? `Next: ${state.next.join(', ')}` : 'Nothing runs next.'}</p>
        <pre className="json" role="region" aria-label="State values" tabIndex={0}>
          {jsonText(state.values)}
        </pre>
      </section>
      <CheckpointHistory history={history} />
      <ThreadRuns runs={runs} />
      <div className="page-actions">
        <DeleteThread agent={agent} deploymentId={deploymentId} threadId={threadId} />
      </div>
    </>
  );
}

/**
 * One thread of a deployment's agent (`#/deployments/<id>/threads/<thread id>`, docs/console.md,
 * Agent): its status, state, pending interrupts (resumed here), checkpoints and runs, read by the
 * api from the deployment's agent with the user's key.
 */
export function ThreadPage({ deploymentId, threadId }: { deploymentId: string; threadId: string }) {
  const api = useApi();
  const deployment = useLoad(
    (signal) => api.get<Deployment>(`/v2/deployments/${deploymentId}`, undefined, signal),
    [api, deploymentId],
  );
  const agent = useAgentApi(deploymentId, Boolean(deployment.data?.url));
  const d = deployment.data;
  return (
    <>
      <p className="crumbs">
        <a href="#/">Deployments</a> / {d ? <a href={`#/deployments/${d.id}`}>{d.name}</a> : '…'} /{' '}
        <a href={agentHref(deploymentId)}>Agent</a>
      </p>
      <PageHeading>Thread {threadId}</PageHeading>
      <ErrorText error={deployment.error} />
      {!d ? (
        !deployment.error && <p role="status">Loading…</p>
      ) : !agent ? (
        <p>This deployment has no URL yet: its agent cannot be asked.</p>
      ) : (
        // Keyed by the thread: useLoad alone drops the last thread's data, the key also its notice and forms.
        <ThreadView key={threadId} agent={agent} deploymentId={deploymentId} threadId={threadId} />
      )}
    </>
  );
}
