import { useEffect, useMemo, useRef, useState } from 'react';
import { type DeploymentLogEntry, followDeploymentLog } from '../api/deployment-log';
import type { LiveMode } from '../api/live';
import type { Deployment } from '../api/types';
import { formatTime } from '../phases';
import { ErrorText, short, useApi } from './common';
import { LiveIndicator } from './live';
import { LogControls } from './LogControls';

/** The newest lines read when the view opens. */
const TAIL = 200;
/** Lines the page keeps: the oldest go once there are more (each revision's own log page has them all). */
export const KEPT_LINES = 1_000;

/** The address of the deployment's Logs view. */
export const deploymentLogsHref = (deploymentId: string) => `#/deployments/${deploymentId}?tab=logs`;

/** Ids are increasing integers (as strings): numeric order. */
const byId = (a: string, b: string) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
/** The API's order: by time, then id (lines of different revisions can share a timestamp). */
const byTime = (a: DeploymentLogEntry, b: DeploymentLogEntry) =>
  a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : byId(a.id, b.id);

/**
 * Merges fresh lines into `old` (skipping ids already there) in time order and keeps the newest
 * `KEPT_LINES`; returns the lines and how many were dropped. Once full, a line older than every
 * kept one is not taken (a re-read of lines dropped already would count them twice).
 */
function merge(old: DeploymentLogEntry[], fresh: DeploymentLogEntry[], seen: Set<string>) {
  const full = old.length >= KEPT_LINES;
  const added = fresh.filter((l) => !seen.has(l.id) && !(full && byTime(l, old[0]!) < 0));
  if (!added.length) return { lines: old, dropped: 0 };
  for (const l of added) seen.add(l.id);
  const all = [...old, ...added];
  // Lines nearly always come in order: sort only when one did not.
  if (all.some((l, i) => i > 0 && byTime(all[i - 1]!, l) > 0)) all.sort(byTime);
  const dropped = Math.max(0, all.length - KEPT_LINES);
  for (const l of all.slice(0, dropped)) seen.delete(l.id);
  return { lines: dropped ? all.slice(dropped) : all, dropped };
}

/**
 * The whole deployment's log, followed live (docs/console.md, Logs): the serving revision's
 * instances and rollout and the builds of newer revisions, interleaved by time, each line marked
 * with its revision, its log (build or deploy) and the instance that printed it. Pause holds new
 * lines back (counted) until Resume; filters by level, revision and text.
 */
export function DeploymentLogView({ deployment }: { deployment: Deployment }) {
  const api = useApi();
  const [lines, setLines] = useState<DeploymentLogEntry[]>([]);
  const [dropped, setDropped] = useState(0);
  const [mode, setMode] = useState<LiveMode>('connecting');
  const [error, setError] = useState<string | null>(null);
  const [paused, setPaused] = useState(false);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;
  const held = useRef<DeploymentLogEntry[]>([]);
  const [heldCount, setHeldCount] = useState(0);
  const seen = useRef(new Set<string>());
  const [level, setLevel] = useState('');
  const [revision, setRevision] = useState('');
  const [search, setSearch] = useState('');
  const bottom = useRef<HTMLDivElement>(null);

  // Kept beside the state so merging stays outside a state updater (which React may run twice).
  const kept = useRef<DeploymentLogEntry[]>([]);
  const add = (fresh: DeploymentLogEntry[]) => {
    const merged = merge(kept.current, fresh, seen.current);
    if (merged.lines === kept.current) return;
    kept.current = merged.lines;
    setLines(merged.lines);
    if (merged.dropped) setDropped((n) => n + merged.dropped);
  };

  useEffect(() => {
    setLines([]);
    setDropped(0);
    kept.current = [];
    seen.current = new Set();
    held.current = [];
    setHeldCount(0);
    return followDeploymentLog(api, {
      deploymentId: deployment.id,
      tail: TAIL,
      onLines: (fresh) => {
        if (!pausedRef.current) return add(fresh);
        const holding = new Set(held.current.map((l) => l.id));
        const news = fresh.filter((l) => !seen.current.has(l.id) && !holding.has(l.id));
        if (!news.length) return;
        // Held lines are bounded too: a long pause keeps the newest of them.
        held.current = [...held.current, ...news].slice(-KEPT_LINES);
        setHeldCount(held.current.length);
      },
      onMode: setMode,
      onError: setError,
    });
  }, [api, deployment.id]);

  const pause = () => setPaused(true);
  const resume = () => {
    const fresh = held.current;
    held.current = [];
    setHeldCount(0);
    setPaused(false);
    if (fresh.length) add(fresh);
  };

  const revisions = useMemo(() => [...new Set(lines.map((l) => l.revision_id))], [lines]);
  const shown = useMemo(() => {
    const needle = search.trim().toLowerCase();
    return lines.filter(
      (l) =>
        (!level || l.level === level) &&
        (!revision || l.revision_id === revision) &&
        (!needle || l.message.toLowerCase().includes(needle)),
    );
  }, [lines, level, revision, search]);

  useEffect(() => {
    // The log box scrolls, not the page.
    const box = bottom.current?.parentElement;
    if (!paused && box) box.scrollTop = box.scrollHeight;
  }, [shown.length, paused]);

  const active = deployment.active_revision_id;
  return (
    <section aria-labelledby="deployment-log-title">
      <h2 id="deployment-log-title">Logs</h2>
      <p className="hint">
        The serving revision's instances and rollout, and the builds of newer revisions, as they happen. The newest{' '}
        {KEPT_LINES} lines stay on this page; a line's revision opens all of that revision's log.
      </p>
      <ErrorText error={error} />
      <form className="filters" onSubmit={(e) => e.preventDefault()} aria-label="Deployment log view">
        <LogControls paused={paused} held={heldCount} pause={pause} resume={resume} level={level} setLevel={setLevel} />
        <label>
          Revision
          <select value={revision} onChange={(e) => setRevision(e.target.value)}>
            <option value="">All revisions</option>
            {revisions.map((r) => (
              <option key={r} value={r}>
                {short(r)}
                {r === active ? ' (serving)' : ''}
              </option>
            ))}
          </select>
        </label>
        <label>
          Search
          <input type="search" value={search} onChange={(e) => setSearch(e.target.value)} />
        </label>
      </form>
      <LiveIndicator mode={paused ? 'polling' : mode} />
      <div className="log" role="log" aria-label="Deployment log" tabIndex={0}>
        {shown.length === 0 ? (
          <p className="empty">{lines.length ? 'No line matches.' : 'No lines yet.'}</p>
        ) : (
          <ol>
            {shown.map((l) => (
              <li key={l.id} className={`level-${l.level}`} data-revision-id={l.revision_id} data-type={l.type}>
                <time dateTime={l.timestamp} title={formatTime(l.timestamp)}>
                  {l.timestamp.slice(11, 23)}
                </time>{' '}
                <span className="level">{l.level}</span>{' '}
                <a
                  className="log-revision"
                  href={`#/deployments/${deployment.id}/revisions/${l.revision_id}/logs?type=${l.type}`}
                  title={`The ${l.type} log of revision ${l.revision_id}`}
                >
                  {short(l.revision_id)} {l.type}
                </a>
                {typeof l.instance === 'number' ? <span className="instance"> [{l.instance}]</span> : null}{' '}
                <span className="text">{l.message}</span>
              </li>
            ))}
          </ol>
        )}
        <div ref={bottom} />
      </div>
      <p className="hint">
        {shown.length} of {lines.length} lines shown
        {dropped ? `; ${dropped} older line${dropped === 1 ? '' : 's'} dropped from this page` : ''}.
      </p>
    </section>
  );
}
