import { useEffect, useMemo, useRef, useState } from 'react';
import { followLog, type LiveMode } from '../api/live';
import { TERMINAL_REVISION_STATUSES, type LogEntry, type Revision, type RevisionStatus } from '../api/types';
import { formatTime } from '../phases';
import { ErrorText, useApi } from './common';
import { LiveIndicator } from './live';
import { LogControls } from './LogControls';

export type LogType = 'build' | 'deploy';

/** Log ids are increasing integers (as strings): order them numerically. */
const byId = (a: LogEntry, b: LogEntry) => a.id.length - b.id.length || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Whether `revision` is the one serving `activeRevisionId`'s deployment now (its output keeps coming). */
export const isServing = (revision: Pick<Revision, 'id' | 'status'>, activeRevisionId: string | null) =>
  revision.status === 'DEPLOYED' && revision.id === activeRevisionId;

/**
 * The log a revision's Logs link opens first: the deploy (runtime) log of the revision that
 * serves, and of one being rolled out; the build log of any other (queued or building, failed,
 * replaced).
 */
export function defaultLogType(revision: Pick<Revision, 'id' | 'status'>, activeRevisionId: string | null): LogType {
  if (isServing(revision, activeRevisionId)) return 'deploy';
  return revision.status === 'AWAITING_DEPLOY' || revision.status === 'DEPLOYING' ? 'deploy' : 'build';
}

/**
 * A revision's build or deploy log, followed live: through the rollout and, for the serving
 * revision, afterwards too (its instances' output). Filters by level, instance and text; Pause
 * holds new lines back (counted) until Resume. Used by the logs page and the deployment page.
 */
export function LogView(props: {
  deploymentId: string;
  revisionId: string;
  status: RevisionStatus | undefined;
  serving: boolean;
  initialType: LogType;
  initialLevel?: string;
}) {
  const { deploymentId, revisionId, status, serving, initialType, initialLevel = '' } = props;
  const api = useApi();
  const [type, setType] = useState<LogType>(initialType);
  const [paused, setPaused] = useState(false);
  const follow = !paused;
  const held = useRef<LogEntry[]>([]);
  const [heldCount, setHeldCount] = useState(0);
  const [level, setLevel] = useState(initialLevel);
  const [instance, setInstance] = useState('');
  const [search, setSearch] = useState('');
  const [lines, setLines] = useState<LogEntry[]>([]);
  const [mode, setMode] = useState<LiveMode>('connecting');
  const [error, setError] = useState<string | null>(null);
  const running = useRef(true);
  running.current = !status || !TERMINAL_REVISION_STATUSES.includes(status) || (type === 'deploy' && serving);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;
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
        if (!added.length) return;
        if (pausedRef.current) {
          held.current.push(...added);
          setHeldCount(held.current.length);
        } else setLines((old) => [...old, ...added].sort(byId));
      },
      onMode: setMode,
      onError: setError,
      keepFollowing: () => running.current,
    });
  }, [api, deploymentId, revisionId, type]);

  const pause = () => setPaused(true);
  const resume = () => {
    const lines = held.current;
    held.current = [];
    setHeldCount(0);
    setPaused(false);
    if (lines.length) setLines((old) => [...old, ...lines].sort(byId));
  };
  const instances = useMemo(
    () =>
      [...new Set(lines.map((l) => l.instance).filter((i): i is number => typeof i === 'number'))].sort(
        (a, b) => a - b,
      ),
    [lines],
  );

  const shown = useMemo(() => {
    const needle = search.trim().toLowerCase();
    return lines.filter(
      (l) =>
        (!level || l.level === level) &&
        (instance === '' || (instance === 'none' ? l.instance == null : l.instance === Number(instance))) &&
        (!needle || l.message.toLowerCase().includes(needle)),
    );
  }, [lines, level, instance, search]);

  useEffect(() => {
    // The log box scrolls, not the page (the view may sit in the middle of a deployment's page).
    const box = bottom.current?.parentElement;
    if (follow && box) box.scrollTop = box.scrollHeight;
  }, [shown.length, follow]);

  return (
    <>
      <ErrorText error={error} />
      <form className="filters" onSubmit={(e) => e.preventDefault()} aria-label="Log view">
        <fieldset>
          <legend>Log</legend>
          {(['build', 'deploy'] as const).map((t) => (
            <label key={t}>
              <input type="radio" name="type" value={t} checked={type === t} onChange={() => setType(t)} />{' '}
              {t === 'build' ? 'Build' : 'Deploy'}
            </label>
          ))}
        </fieldset>
        <LogControls paused={paused} held={heldCount} pause={pause} resume={resume} level={level} setLevel={setLevel} />
        <label>
          Instance
          <select value={instance} onChange={(e) => setInstance(e.target.value)}>
            <option value="">All instances</option>
            {instances.map((i) => (
              <option key={i} value={String(i)}>
                instance {i}
              </option>
            ))}
            <option value="none">The rollout's own lines</option>
          </select>
        </label>
        <label>
          Search
          <input type="search" value={search} onChange={(e) => setSearch(e.target.value)} />
        </label>
      </form>
      <LiveIndicator mode={follow && running.current ? mode : 'polling'} />
      {serving && type === 'deploy' && (
        <p className="hint">This revision serves: its instances' output appears as they print it.</p>
      )}
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
                <span className="level">{l.level}</span>
                {typeof l.instance === 'number' ? <span className="instance"> [{l.instance}]</span> : null}{' '}
                <span className="text">{l.message}</span>
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
