import { useState } from 'react';
import type { Api } from '../api/client';
import {
  TERMINAL_REVISION_STATUSES,
  type Deployment,
  type Envelope,
  type Revision,
  type RevisionHistory,
} from '../api/types';
import { formatTime } from '../phases';
import { AgentAccess, isAgentDeployment } from './AgentAccess';
import { agentHref } from './agent/agent';
import { AgentTab } from './agent/AgentTab';
import {
  ErrorText,
  fieldWords,
  navigate,
  PageHeading,
  sourceWords,
  StatusBadge,
  useApi,
  useHashRoute,
  useLoad,
  valueWords,
} from './common';
import { ActionOutcome, useAction, useConfirm } from './ApiCall';
import { DeleteDialog, RollbackDialog } from './DeploymentActions';
import { DeploymentLogView, deploymentLogsHref } from './DeploymentLogView';
import { DeployFromRepository, isRepohost } from './DeployFromRepository';
import { DomainsSection } from './DomainsSection';
import { EditDeployment } from './EditDeployment';
import { CreatedNotice, LatestLog } from './JustCreated';
import { RevisionCompare } from './health/RevisionCompare';
import { LiveIndicator, useLiveRefresh } from './live';
import { MetricsPanel } from './metrics/MetricsPanel';
import { PhaseChart } from './PhaseChart';
import { PreviewOf, PreviewsSection } from './PreviewsSection';
import { ServingStatus } from './serving';
import { Timeline } from './Timeline';
import { TracesTab, tracesHref } from './traces/TracesTab';

const HISTORY_SIZE = 50;

export interface DeploymentData {
  deployment: Deployment;
  revisions: Revision[];
  /** Status changes per revision id (empty when the server does not offer them). */
  histories: Map<string, RevisionHistory>;
}

async function loadDeployment(api: Api, id: string, signal: AbortSignal): Promise<DeploymentData> {
  const { revisionHistory } = await api.features();
  const [deployment, revisions, history] = await Promise.all([
    api.get<Deployment>(`/v2/deployments/${id}`, undefined, signal),
    api.get<Envelope<Revision>>(`/v2/deployments/${id}/revisions`, { limit: HISTORY_SIZE }, signal),
    revisionHistory
      ? api.get<{ resources: RevisionHistory[] }>(
          `/v2/deployments/${id}/revision-history`,
          { limit: HISTORY_SIZE },
          signal,
        )
      : Promise.resolve({ resources: [] }),
  ]);
  return {
    deployment,
    revisions: revisions.resources,
    histories: new Map(history.resources.map((h) => [h.revision_id, h])),
  };
}

/** "1 CPU, 1024 MB, scale 1–1": the numbers people look for first. */
function resourceSummary(spec: Record<string, unknown>): string {
  const parts = [];
  if (spec.cpu != null) parts.push(`${spec.cpu} CPU`);
  if (spec.memory_mb != null) parts.push(`${spec.memory_mb} MB`);
  if (spec.min_scale != null) parts.push(`scale ${spec.min_scale}–${spec.max_scale ?? spec.min_scale}`);
  return parts.join(', ') || 'Details';
}

function ConfigList({ deployment }: { deployment: Deployment }) {
  const config = deployment.source_config ?? {};
  const entries: Array<[string, unknown]> = [
    ['Source', sourceWords(deployment.source)],
    ['Type', deployment.deployment_type],
    ['Integration', config.integration_id],
    ['Repository', config.repo_url],
    ['Listener', config.listener_id],
    ['Build on push', config.build_on_push],
    ['Install command', config.install_command],
    ['Build command', config.build_command],
    ...Object.entries(deployment.source_revision_config ?? {}).map(([k, v]): [string, unknown] => [fieldWords(k), v]),
    ['Created', formatTime(deployment.created_at)],
  ];
  return (
    <dl className="config">
      {entries
        .filter(([, v]) => v !== null && v !== undefined && v !== '')
        .map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{valueWords(v)}</dd>
          </div>
        ))}
      {config.resource_spec ? (
        <div className="wide">
          <dt>Resources</dt>
          <dd>
            <details>
              <summary>{resourceSummary(config.resource_spec as Record<string, unknown>)}</summary>
              <dl className="spec">
                {Object.entries(config.resource_spec as Record<string, unknown>).map(([k, v]) => (
                  <div key={k}>
                    <dt>{fieldWords(k)}</dt>
                    <dd>{valueWords(v)}</dd>
                  </div>
                ))}
              </dl>
            </details>
          </dd>
        </div>
      ) : null}
    </dl>
  );
}

type Tab = 'overview' | 'logs' | 'traces' | 'agent';

/** The page's views; the address says which (`?tab=logs`), so a reload keeps it. Agent only for agent deployments. */
function DeploymentTabs({ deploymentId, tab, agent }: { deploymentId: string; tab: Tab; agent: boolean }) {
  const current = (t: Tab) => (tab === t ? 'page' : undefined);
  return (
    <nav aria-label="Deployment views" className="tabs">
      <a href={`#/deployments/${deploymentId}`} aria-current={current('overview')}>
        Overview
      </a>
      <a href={deploymentLogsHref(deploymentId)} aria-current={current('logs')}>
        Logs
      </a>
      <a href={tracesHref(deploymentId)} aria-current={current('traces')}>
        Traces
      </a>
      {agent && (
        <a href={agentHref(deploymentId)} aria-current={current('agent')}>
          Agent
        </a>
      )}
    </nav>
  );
}

/** Secret names only: the API never returns values, and the console shows a mask. */
function Secrets({ secrets }: { secrets: Deployment['secrets'] }) {
  if (!secrets?.length) return <p>No secrets.</p>;
  return (
    <ul className="secrets" aria-label="Secrets (values hidden)">
      {secrets.map((s) => (
        <li key={s.name}>
          <code>{s.name}</code> <span aria-label="value hidden">••••••••</span>
        </li>
      ))}
    </ul>
  );
}

export function DeploymentPage({ deploymentId }: { deploymentId: string }) {
  const api = useApi();
  const data = useLoad((signal) => loadDeployment(api, deploymentId, signal), [api, deploymentId]);
  const { query } = useHashRoute();
  const tabAsked = query.get('tab');
  const live = useLiveRefresh(data.reload, (e) => e.deployment_id === deploymentId);
  const [rollbackOf, setRollbackOf] = useState<Revision | null>(null);
  const [deleting, setDeleting] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  // Interrupt, roll back and delete: one action of the page, its error and API call shown here.
  const action = useAction();
  const [confirm, ask] = useConfirm();

  if (!data.data) {
    return (
      <>
        <PageHeading>Deployment</PageHeading>
        {data.error ? <ErrorText error={data.error} /> : <p role="status">Loading…</p>}
      </>
    );
  }
  const { deployment, revisions, histories } = data.data;
  const active = revisions.find((r) => r.id === deployment.active_revision_id) ?? null;
  const latest = revisions.find((r) => r.id === deployment.latest_revision_id) ?? null;
  const running = latest && !TERMINAL_REVISION_STATUSES.includes(latest.status) ? latest : null;
  const agent = isAgentDeployment(deployment);
  const tab: Tab =
    tabAsked === 'logs' || tabAsked === 'traces' ? tabAsked : tabAsked === 'agent' && agent ? 'agent' : 'overview';

  const interrupt = async (revision: Revision) => {
    setNotice(null);
    if (
      await action.perform((call) =>
        call<Revision>('POST', `/v2/deployments/${deployment.id}/revisions/${revision.id}/interruption`),
      )
    ) {
      setNotice(`Revision ${revision.id} interrupted.`);
      data.reload();
    }
  };

  const heading = (
    <>
      <p className="crumbs">
        <a href="#/">Deployments</a> / {deployment.name}
      </p>
      <PageHeading>{deployment.name}</PageHeading>
      <PreviewOf deployment={deployment} />
      <DeploymentTabs deploymentId={deployment.id} tab={tab} agent={agent} />
    </>
  );
  if (tab === 'logs') {
    return (
      <>
        {heading}
        <DeploymentLogView deployment={deployment} />
      </>
    );
  }
  if (tab === 'traces') {
    return (
      <>
        {heading}
        <TracesTab deployment={deployment} query={query} agentUrl={agent ? deployment.url : null} />
      </>
    );
  }
  if (tab === 'agent') {
    return (
      <>
        {heading}
        <AgentTab deployment={deployment as Deployment & { url: string }} query={query} />
      </>
    );
  }

  return (
    <>
      {heading}
      <LiveIndicator {...live} />
      <CreatedNotice deploymentId={deployment.id} />
      <ErrorText error={data.error} />
      {notice && (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      {!rollbackOf && !deleting && <ActionOutcome action={action} />}
      <section aria-labelledby="overview-title" className="overview">
        <h2 id="overview-title">Overview</h2>
        <p>
          Status: <ServingStatus deployment={deployment} latest={latest} label="Deployment" />
          <br />
          Serving URL:{' '}
          {deployment.url ? (
            <a className="url" href={deployment.url}>
              {deployment.url}
            </a>
          ) : (
            'none yet'
          )}
          <br />
          Active revision: {active ? <code>{active.id}</code> : 'none'}{' '}
          <StatusBadge status={active?.status} label="Active revision" />
          <br />
          Latest revision: {latest ? <code>{latest.id}</code> : 'none'}{' '}
          <StatusBadge status={latest?.status} label="Latest revision" />
        </p>
        <RevisionCompare deploymentId={deployment.id} active={active} latest={latest} />
        <div className="actions">
          {running && (
            <button
              type="button"
              className="danger"
              onClick={() =>
                ask(
                  `Interrupt revision ${running.id} (${running.status})? Its build or rollout is cancelled; ${active ? `revision ${active.id} keeps serving` : 'nothing serves until another revision deploys'}.`,
                  'Interrupt',
                  () => interrupt(running),
                )
              }
            >
              Interrupt the running revision
            </button>
          )}
          <a href={deploymentLogsHref(deployment.id)}>Logs</a>
          <button
            type="button"
            className="danger"
            onClick={() => (action.reset(), setDeleting(true))}
            disabled={deployment.status === 'AWAITING_DELETE'}
          >
            Delete deployment
          </button>
        </div>
      </section>
      {isRepohost(deployment) && (
        <DeployFromRepository
          deployment={deployment}
          latest={latest}
          onDone={(message) => {
            setNotice(message);
            data.reload();
          }}
        />
      )}
      {latest && query.get('log') === 'latest' && <LatestLog deployment={deployment} latest={latest} />}
      <DomainsSection deployment={deployment} />
      <PreviewsSection deployment={deployment} />
      {deployment.url && <MetricsPanel deploymentId={deployment.id} runs={deployment.agent_server === true} />}
      {agent && <AgentAccess deployment={deployment as Deployment & { url: string }} />}
      <section aria-labelledby="config-title">
        <h2 id="config-title">Configuration</h2>
        <ConfigList deployment={deployment} />
        <h3>Secrets</h3>
        <Secrets secrets={deployment.secrets} />
      </section>
      <section aria-label="Edit">
        <EditDeployment
          deployment={deployment}
          onDone={(message) => {
            setNotice(message);
            data.reload();
          }}
        />
      </section>
      <section aria-labelledby="chart-title">
        <h2 id="chart-title">Phase durations, last {Math.min(revisions.length, HISTORY_SIZE)} revisions</h2>
        <PhaseChart histories={[...histories.values()]} />
      </section>
      <section aria-labelledby="timeline-title">
        <h2 id="timeline-title">Revisions</h2>
        <Timeline
          deployment={deployment}
          revisions={revisions}
          histories={histories}
          onRollback={(r) => (action.reset(), setRollbackOf(r))}
        />
      </section>
      <RollbackDialog
        deployment={deployment}
        target={rollbackOf}
        active={active}
        action={action}
        onClose={() => setRollbackOf(null)}
        onDone={(newRevisionId) => {
          setRollbackOf(null);
          setNotice(`Rolling back: revision ${newRevisionId} redeploys the chosen one.`);
          data.reload();
        }}
      />
      {confirm}
      <DeleteDialog
        deployment={deployment}
        open={deleting}
        action={action}
        onClose={() => setDeleting(false)}
        onDone={() => {
          // The deployment is going away: back to the list, which no longer shows it.
          setDeleting(false);
          navigate('/');
        }}
      />
    </>
  );
}
