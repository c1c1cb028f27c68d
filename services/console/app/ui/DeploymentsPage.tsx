import { useMemo, useRef, type FormEvent } from 'react';
import { apiBase, type Api } from '../api/client';
import {
  DEPLOYMENT_STATUSES,
  DEPLOYMENT_TYPES,
  FAILED_REVISION_STATUSES,
  TERMINAL_REVISION_STATUSES,
  type Deployment,
  type Envelope,
  type Revision,
} from '../api/types';
import { ago, formatTime } from '../phases';
import { ErrorText, navigate, PageHeading, SourceLabel, StatusBadge, useApi, useLoad } from './common';
import { LiveIndicator, useLiveRefresh } from './live';
import { Clipped, ServingStatus } from './serving';
import { loadTagChoices } from './TagsFields';

const PAGE_SIZE = 20;

interface Filters {
  status: string;
  deployment_type: string;
  tag_value_id: string;
  name_contains: string;
}

interface Row {
  deployment: Deployment;
  active: Revision | null;
  latest: Revision | null;
}

const FILTER_NAMES = ['name_contains', 'status', 'deployment_type', 'tag_value_id'] as const;

/** The filters and page offset kept in the address (`#/?status=READY&offset=20`), so a reload or a shared link keeps them. */
function filtersOf(query: URLSearchParams): { filters: Filters; offset: number } {
  const filters = Object.fromEntries(FILTER_NAMES.map((name) => [name, query.get(name) ?? ''])) as unknown as Filters;
  const offset = Number.parseInt(query.get('offset') ?? '0', 10);
  return { filters, offset: Number.isSafeInteger(offset) && offset > 0 ? offset : 0 };
}

/**
 * One page of deployments (filters mapped to the list API), each with its two revisions. A
 * revision in a terminal status never changes, so `known` keeps those and a refresh re-reads only
 * the ones still moving: a steady table costs one request per refresh.
 */
async function loadRows(
  api: Api,
  filters: Filters,
  offset: number,
  known: Map<string, Revision>,
  signal: AbortSignal,
): Promise<{ rows: Row[]; next: number }> {
  const page = await api.get<Envelope<Deployment>>(
    '/v2/deployments',
    {
      limit: PAGE_SIZE,
      offset,
      status: filters.status,
      deployment_type: filters.deployment_type,
      tag_value_ids: filters.tag_value_id,
      name_contains: filters.name_contains,
    },
    signal,
  );
  const revision = async (d: Deployment, id: string | null): Promise<Revision | null> => {
    if (!id) return null;
    const cached = known.get(id);
    if (cached) return cached;
    const fresh = await api
      .get<Revision>(`/v2/deployments/${d.id}/revisions/${id}`, undefined, signal)
      .catch(() => null);
    if (fresh && TERMINAL_REVISION_STATUSES.includes(fresh.status)) known.set(id, fresh);
    return fresh;
  };
  const rows = await Promise.all(
    page.resources.map(async (deployment) => {
      const [active, latest] = await Promise.all([
        revision(deployment, deployment.active_revision_id),
        deployment.latest_revision_id === deployment.active_revision_id
          ? null
          : revision(deployment, deployment.latest_revision_id),
      ]);
      return {
        deployment,
        active,
        latest: latest ?? (deployment.latest_revision_id === deployment.active_revision_id ? active : null),
      };
    }),
  );
  return { rows, next: page.offset };
}

/** Every tag value of the workspace, labelled `key: value`, for the tag filter. */
async function loadTagValues(api: Api, signal: AbortSignal): Promise<Array<{ id: string; label: string }>> {
  return (await loadTagChoices(api, signal)).flatMap(({ key, values }) =>
    values.map((v) => ({ id: v.id, label: `${key.key}: ${v.value}` })),
  );
}

function lastActivity(row: Row): string {
  return [row.deployment.updated_at, row.latest?.updated_at, row.active?.updated_at].filter(Boolean).sort().at(-1)!;
}

export function DeploymentsPage({ query }: { query: URLSearchParams }) {
  const api = useApi();
  const key = query.toString();
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const { filters, offset } = useMemo(() => filtersOf(query), [key]);
  const filtered = FILTER_NAMES.some((name) => filters[name]);
  const go = (next: Filters, nextOffset: number) => navigate('/', { ...next, offset: nextOffset });
  const known = useRef(new Map<string, Revision>()).current;
  const list = useLoad((signal) => loadRows(api, filters, offset, known, signal), [api, key]);
  const tags = useLoad((signal) => loadTagValues(api, signal), [api]);
  const live = useLiveRefresh(list.reload, (e) => e.type.startsWith('deployment.') || e.type.startsWith('revision.'));

  const apply = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const read = (name: keyof Filters) => String(form.get(name) ?? '').trim();
    go(
      {
        status: read('status'),
        deployment_type: read('deployment_type'),
        tag_value_id: read('tag_value_id'),
        name_contains: read('name_contains'),
      },
      0,
    );
  };

  const rows = list.data?.rows ?? [];
  return (
    <>
      <PageHeading>Deployments</PageHeading>
      <p className="actions">
        <a className="button-primary" href="#/deployments/new">
          Create a deployment
        </a>
      </p>
      <LiveIndicator {...live} />
      <form key={key} className="filters" onSubmit={apply} aria-label="Filter deployments">
        <label>
          Name contains
          <input name="name_contains" type="search" defaultValue={filters.name_contains} />
        </label>
        <label>
          Status
          <select name="status" defaultValue={filters.status}>
            <option value="">Any</option>
            {DEPLOYMENT_STATUSES.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Type
          <select name="deployment_type" defaultValue={filters.deployment_type}>
            <option value="">Any</option>
            {DEPLOYMENT_TYPES.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </label>
        <label>
          Tag
          <select key={tags.data ? 'loaded' : 'loading'} name="tag_value_id" defaultValue={filters.tag_value_id}>
            <option value="">Any</option>
            {(tags.data ?? []).map((t) => (
              <option key={t.id} value={t.id}>
                {t.label}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" className="primary">
          Apply filters
        </button>
      </form>
      <ErrorText error={list.error ?? tags.error} />
      {list.data && rows.length === 0 && offset === 0 ? (
        <EmptyList filtered={filtered} />
      ) : (
        <div className="table-scroll">
          <table className="deployments">
            <caption>
              {list.loading && !list.data
                ? 'Loading deployments…'
                : `${rows.length} deployment${rows.length === 1 ? '' : 's'} on this page`}
            </caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Source</th>
                <th scope="col">Status</th>
                <th scope="col">Active revision</th>
                <th scope="col">Latest revision</th>
                <th scope="col">URL</th>
                <th scope="col">Last activity</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <tr key={row.deployment.id} data-deployment-id={row.deployment.id}>
                  <th scope="row">
                    <a href={`#/deployments/${row.deployment.id}`}>{row.deployment.name}</a>
                  </th>
                  <td data-label="Source">
                    <SourceLabel source={row.deployment.source} type={row.deployment.deployment_type} />
                  </td>
                  <td data-label="Status">
                    <ServingStatus deployment={row.deployment} latest={row.latest} />
                  </td>
                  <td data-label="Active revision" className="active-status">
                    <StatusBadge status={row.active?.status} label="Active revision" />
                  </td>
                  <td data-label="Latest revision" className="latest-status">
                    <StatusBadge status={row.latest?.status} label="Latest revision" />
                    {row.latest?.status_message && FAILED_REVISION_STATUSES.includes(row.latest.status) && (
                      <Clipped className="message" text={row.latest.status_message} />
                    )}
                  </td>
                  <td data-label="URL">
                    {row.deployment.url ? <a href={row.deployment.url}>{row.deployment.url}</a> : '—'}
                  </td>
                  <td data-label="Last activity">
                    <time dateTime={lastActivity(row)} title={formatTime(lastActivity(row))}>
                      {ago(lastActivity(row))}
                    </time>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <nav className="pager" aria-label="Pages of deployments">
        <button
          type="button"
          className="secondary"
          disabled={offset === 0}
          onClick={() => go(filters, Math.max(0, offset - PAGE_SIZE))}
        >
          Previous page
        </button>
        <button
          type="button"
          className="secondary"
          disabled={rows.length < PAGE_SIZE}
          onClick={() => go(filters, list.data?.next ?? offset + PAGE_SIZE)}
        >
          Next page
        </button>
      </nav>
    </>
  );
}

/** What an empty list means, and what to do about it. */
function EmptyList({ filtered }: { filtered: boolean }) {
  if (filtered) {
    return (
      <section className="empty-state" aria-labelledby="empty-title">
        <h2 id="empty-title">No deployments match these filters</h2>
        <p>
          Widen them, or <a href="#/">show every deployment</a>.
        </p>
      </section>
    );
  }
  return (
    <section className="empty-state" aria-labelledby="empty-title">
      <h2 id="empty-title">No deployments yet</h2>
      <p>Deploy a LangGraph.js project from its folder with the published CLI, pointed at this server:</p>
      <pre>
        <code>{`LANGSMITH_API_KEY=<your Slipway API key> npx @langchain/langgraph-cli \\
  deploy --remote --host-url ${location.origin}${apiBase()} --name my-agent`}</code>
      </pre>
      <p>
        Or create one through the API (<code>POST /v2/deployments</code>, from a repository or a container image): see
        the <a href={`${apiBase()}/docs`}>API reference</a>. It shows up here as soon as it exists.
      </p>
    </section>
  );
}
