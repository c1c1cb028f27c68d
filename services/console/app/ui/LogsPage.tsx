import { useEffect, useMemo, useRef, useState } from 'react';
import { followLog, type LiveMode } from '../api/live';
import { TERMINAL_REVISION_STATUSES, type Deployment, type LogEntry, type Revision } from '../api/types';
import { formatTime } from '../phases';
import { ErrorText, PageHeading, short, StatusBadge, useApi, useLoad } from './common';
import { LiveIndicator, useLiveRefresh } from './live';

const LEVELS = ['debug', 'info', 'warn', 'error'];

/** Log ids are increasing integers (as strings): order them numerically. */
const byId = (a: LogEntry, b: LogEntry) => (a.id.length - b.id.length) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export function LogsPage({ deploymentId, revisionId }: { deploymentId: string; revisionId: string }) {
  const api = useApi();
  const info = useLoad(
    async (signal) => {
      const [deployment, revision] = await Promise.all([
        api.get<Deployment>(`/v2/deployments/${deploymentId}`, undefined, signal),
        api.get<Revision>(`/v2/deployments/${deploymentId}/revisions/${revisionId}`, undefined, signal),
      ]);
      return { deployment, revision };
    },
    [api, deploymentId, revisionId],
  );
  useLiveRefresh(info.reload, (e) => e.revision_id === revisionId);
  const [type, setType] = useState<'build' | 'deploy'>('build');
  const [follow, setFollow] = useState(true);
  const [level, setLevel] = useState('');
  const [search, setSearch] = useState('');
  const [lines, setLines] = useState<LogEntry[]>([]);
  const [mode, setMode] = useState<LiveMode>('connecting');
  const [error, setError] = useState<string | null>(null);
  const status = info.data?.revision.status;
  const running = useRef(true);
  running.current = !status || !TERMINAL_REVISION_STATUSES.includes(status);
  const followRef = useRef(follow);
  followRef.current = follow;
  const bottom = useRef<HTMLDivElement>(null);

  useEffect(() => {
    setLines([]);
    setError(null);
    const seen = new Set<string>();
    return followLog(api, {
      deploymentId,
      revisionId,
      type,
      onLines: (fresh) => {
        const added = fresh.filter((l) => !seen.has(l.id));
        added.forEach((l) => seen.add(l.id));
        if (added.length) setLines((old) => [...old, ...added].sort(byId));
      },
      onMode: setMode,
      onError: setError,
      keepFollowing: () => running.current && followRef.current,
    });
  }, [api, deploymentId, revisionId, type]);

  const shown = useMemo(() => {
    const needle = search.trim().toLowerCase();
    return lines.filter((l) => (!level || l.level === level) && (!needle || l.message.toLowerCase().includes(needle)));
  }, [lines, level, search]);

  useEffect(() => {
    if (follow) bottom.current?.scrollIntoView({ block: 'end' });
  }, [shown.length, follow]);

  return (
    <>
      <p className="crumbs">
        <a href="#/">Deployments</a> / <a href={`#/deployments/${deploymentId}`}>{info.data?.deployment.name ?? short(deploymentId)}</a> / logs of{' '}
        <code>{short(revisionId)}</code>
      </p>
      <PageHeading>Logs of revision {short(revisionId)}</PageHeading>
      <p>
        Revision status: <StatusBadge status={status} />
      </p>
      <ErrorText error={info.error ?? error} />
      <form className="filters" onSubmit={(e) => e.preventDefault()} aria-label="Log view">
        <fieldset>
          <legend>Log</legend>
          {(['build', 'deploy'] as const).map((t) => (
            <label key={t}>
              <input type="radio" name="type" value={t} checked={type === t} onChange={() => setType(t)} /> {t === 'build' ? 'Build' : 'Deploy'}
            </label>
          ))}
        </fieldset>
        <label>
          <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> Follow new lines
        </label>
        <label>
          Level
          <select value={level} onChange={(e) => setLevel(e.target.value)}>
            <option value="">All levels</option>
            {LEVELS.map((l) => (
              <option key={l}>{l}</option>
            ))}
          </select>
        </label>
        <label>
          Search
          <input type="search" value={search} onChange={(e) => setSearch(e.target.value)} />
        </label>
      </form>
      <LiveIndicator mode={follow && running.current ? mode : 'polling'} />
      <div className="log" role="log" aria-label={`${type} log`} tabIndex={0}>
        {shown.length === 0 ? (
          <p className="empty">{lines.length ? 'No line matches.' : 'No lines yet.'}</p>
        ) : (
          <ol>
            {shown.map((l) => (
              <li key={l.id} className={`level-${l.level}`}>
                <time dateTime={l.timestamp} title={formatTime(l.timestamp)}>
                  {l.timestamp.slice(11, 23)}
                </time>{' '}
                <span className="level">{l.level}</span> <span className="text">{l.message}</span>
              </li>
            ))}
          </ol>
        )}
        <div ref={bottom} />
      </div>
      <p className="hint">
        {shown.length} of {lines.length} lines shown.
      </p>
    </>
  );
}
