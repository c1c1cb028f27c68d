import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { EVENT_TYPES, type WorkspaceEvent } from '../api/types';
import { formatTime } from '../phases';
import { ErrorText, navigate, PageHeading, short, useApi } from './common';
import { useDeploymentNames } from './deploymentNames';
import { LiveIndicator, useLiveRefresh } from './live';
import { Clipped } from './serving';

const PAGE = 100;
/** Pages read in one go (to reach the newest events); past that, a button reads on. */
const PAGES_AT_ONCE = 10;

/** Event ids grow in commit order: newest first is the larger id first. */
const newestFirst = (a: WorkspaceEvent, b: WorkspaceEvent) =>
  BigInt(b.id) > BigInt(a.id) ? 1 : BigInt(b.id) < BigInt(a.id) ? -1 : 0;

/** What an event says, in words. */
function summary(e: WorkspaceEvent): string {
  const d = e.data ?? {};
  if (e.type.endsWith('status_changed'))
    return `${d.from ?? '—'} → ${d.to ?? '—'}${d.status_message ? `: ${d.status_message}` : ''}`;
  if (e.type === 'deployment.created' || e.type === 'deployment.deleted') return String(d.name ?? '');
  if (e.type === 'revision.created')
    return `${d.status ?? ''}${d.redeployed_from ? `, redeploy of ${short(String(d.redeployed_from))}` : ''}`;
  return JSON.stringify(d);
}

/**
 * The workspace's events (`GET /v2/events`), newest first. The API pages forward from a cursor
 * (`after`, from the address when given): the page reads on to the newest (up to
 * PAGES_AT_ONCE pages, then a button reads further), and new events appear on top as they
 * happen. Each names its deployment (linked). Filters live in the address too.
 */
export function EventsPage({ query }: { query: URLSearchParams }) {
  const api = useApi();
  const deploymentId = query.get('deployment_id') ?? '';
  const type = query.get('type') ?? '';
  const [events, setEvents] = useState<WorkspaceEvent[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);
  /** The last page was full: more events may follow it. */
  const [full, setFull] = useState(false);
  const cursor = useRef<string>(query.get('after') ?? '');
  const busy = useRef(false);
  const [draft, setDraft] = useState({ deploymentId, type });

  const more = useCallback(async () => {
    if (busy.current) return;
    busy.current = true;
    try {
      let full = false;
      for (let read = 0; read < PAGES_AT_ONCE; read++) {
        const page = await api.get<{ resources: WorkspaceEvent[]; offset: string | null }>('/v2/events', {
          after: cursor.current,
          limit: PAGE,
          deployment_id: deploymentId || undefined,
          types: type || undefined,
        });
        // The cursor only moves forward, and an event already shown is never added twice, whatever
        // order overlapping reads (the first page, a live refresh) answer in.
        if (page.offset && BigInt(page.offset) > BigInt(cursor.current || '0')) cursor.current = page.offset;
        setEvents((old) => {
          const shown = new Set(old.map((e) => e.id));
          return [...old, ...page.resources.filter((e) => !shown.has(e.id))];
        });
        full = page.resources.length === PAGE;
        if (!full) break;
      }
      setFull(full);
      setError(null);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      busy.current = false;
      setLoaded(true);
    }
  }, [api, deploymentId, type]);

  useEffect(() => void more(), [more]);
  const shown = useMemo(() => [...events].sort(newestFirst), [events]);
  const names = useDeploymentNames(api, events);
  const live = useLiveRefresh(
    more,
    (e) => (!deploymentId || e.deployment_id === deploymentId) && (!type || e.type === type),
  );

  return (
    <>
      <PageHeading>Events</PageHeading>
      <LiveIndicator {...live} />
      <form
        className="filters"
        onSubmit={(e) => {
          e.preventDefault();
          navigate('/events', { deployment_id: draft.deploymentId.trim(), type: draft.type });
        }}
      >
        <label>
          Deployment ID
          <input value={draft.deploymentId} onChange={(e) => setDraft({ ...draft, deploymentId: e.target.value })} />
        </label>
        <label>
          Type
          <select value={draft.type} onChange={(e) => setDraft({ ...draft, type: e.target.value })}>
            <option value="">any</option>
            {EVENT_TYPES.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </label>
        <button type="submit" className="primary">
          Filter
        </button>
      </form>
      <ErrorText error={error} />
      {loaded && !events.length && !error && (
        <p className="empty-state">
          No events{deploymentId || type ? ' match these filters' : ' yet: creating a deployment makes the first'}.
        </p>
      )}
      {events.length > 0 && (
        <div className="table-scroll">
          <table className="events">
            <caption>Events, newest first; new ones appear at the top as they happen.</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Type</th>
                <th scope="col">Deployment / revision</th>
                <th scope="col">What</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((e) => (
                <tr key={e.id} data-event-id={e.id}>
                  <td>
                    <time dateTime={e.created_at}>{formatTime(e.created_at)}</time>
                  </td>
                  <th scope="row">{e.type}</th>
                  <td>
                    {e.deployment_id ? (
                      <a href={`#/deployments/${e.deployment_id}`} title={`Deployment ${e.deployment_id}`}>
                        {names.get(e.deployment_id) ?? short(e.deployment_id)}
                      </a>
                    ) : (
                      '—'
                    )}
                    {e.revision_id && (
                      <>
                        {' / '}
                        <code>{short(e.revision_id)}</code>
                      </>
                    )}
                  </td>
                  <td>
                    <Clipped text={summary(e)} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {full && (
        <p className="pager">
          <button type="button" className="secondary" onClick={() => void more()}>
            Load newer events
          </button>
        </p>
      )}
    </>
  );
}
