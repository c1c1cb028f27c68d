import type { Deployment } from '../../api/types';
import { threadPageHref, useAgentApi } from '../agent/agent';
import { navigate } from '../common';
import { filtersFromQuery, filtersToQuery, NO_FILTERS } from './filters';
import { RevisionTraces } from './RevisionTraces';
import { TraceList } from './TraceList';
import { TraceView } from './TraceView';

/** The address of the deployment's Traces tab with `query` (empty values left out). */
export function tracesHref(deploymentId: string, query: Record<string, string> = {}): string {
  const params = new URLSearchParams(Object.entries({ tab: 'traces', ...query }).filter(([, v]) => v !== ''));
  return `#/deployments/${deploymentId}?${params}`;
}

/**
 * A deployment's traces (docs/console.md, Traces): the list with its filters and the revisions
 * compared, or one trace (`trace=<id>`, its selected run as `run=<id>`). Everything it shows is
 * in the address, so a reload or a shared link opens the same view. With `agentUrl` (a deployment
 * that speaks the LangGraph Server API), a graph run's trace shows the path it took on the graph,
 * and its runs lead to their thread and can be forked.
 */
export function TracesTab({
  deployment,
  query,
  agentUrl,
}: {
  deployment: Deployment;
  query: URLSearchParams;
  agentUrl: string | null;
}) {
  const agent = useAgentApi(deployment.id, agentUrl !== null);
  const filters = filtersFromQuery(query);
  const filterQuery = filtersToQuery(filters);
  const href = (extra: Record<string, string> = {}) => tracesHref(deployment.id, { ...filterQuery, ...extra });
  const traceId = query.get('trace');

  if (traceId) {
    return (
      <TraceView
        key={traceId}
        traceId={traceId}
        runId={query.get('run')}
        runHref={(runId) => href({ trace: traceId, run: runId })}
        listHref={href()}
        threadHref={(thread) => tracesHref(deployment.id, filtersToQuery({ ...NO_FILTERS, thread }))}
        agent={agent}
        threadPageHref={(thread) => threadPageHref(deployment.id, thread)}
      />
    );
  }
  return (
    <>
      <section aria-labelledby="traces-title">
        <h2 id="traces-title">Traces</h2>
        <TraceList
          key={new URLSearchParams(filterQuery).toString()}
          deployment={deployment}
          filters={filters}
          onFilter={(f) => navigate(`/deployments/${deployment.id}`, { tab: 'traces', ...filtersToQuery(f) })}
          traceHref={(id) => href({ trace: id })}
          allHref={tracesHref(deployment.id)}
        />
      </section>
      <RevisionTraces deploymentId={deployment.id} activeRevisionId={deployment.active_revision_id} />
    </>
  );
}
