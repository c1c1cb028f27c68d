import { createContext, useCallback, useContext, useEffect, useRef, useState, type ReactNode } from 'react';
import type { Api } from '../api/client';
import { FAILED_REVISION_STATUSES, TERMINAL_REVISION_STATUSES, type RevisionStatus } from '../api/types';

export const ApiContext = createContext<Api | null>(null);

export function useApi(): Api {
  const api = useContext(ApiContext);
  if (!api) throw new Error('useApi outside a signed-in page');
  return api;
}

export interface Loaded<T> {
  /** The answer for the current inputs; null until it came (never another inputs' answer). */
  data: T | null;
  error: string | null;
  loading: boolean;
  /** Reads again; the data shown stays until the new answer replaces it. */
  reload: () => void;
}

/** What a page shows while the answer for its current inputs has not come yet. */
const LOADING = { data: null, error: null, loading: true } as const;

/**
 * Runs `load` now, again when its inputs change, and on `reload`. A reload asked for while one
 * is still running waits for it (then runs once), so slow answers are never cut off by the next
 * refresh; a change of inputs does cut off the old call, whose answer no longer matters.
 *
 * A reload (a refresh, a poll: the same inputs) keeps the data on screen until the new answer
 * replaces it, and keeps it beside the error if that read fails. New inputs start from nothing:
 * from the first render with them, `data` is null and `loading` true until their own answer comes,
 * so a page never shows the last inputs' answer (another deployment's, another filter's) under
 * the new ones, nor keeps it for good when their read fails.
 */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]): Loaded<T> {
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const run = useCallback(load, deps);
  // `of`: the `run` (one per set of inputs) that the state is for.
  const [state, setState] = useState<{
    of: typeof run | null;
    data: T | null;
    error: string | null;
    loading: boolean;
  }>({ of: null, ...LOADING });
  const [tick, setTick] = useState(0);
  const busy = useRef(false);
  const again = useRef(false);
  useEffect(() => {
    const abort = new AbortController();
    busy.current = true;
    setState((s) => (s.of === run ? { ...s, loading: true } : { of: run, ...LOADING }));
    run(abort.signal)
      .then(
        (data) => !abort.signal.aborted && setState({ of: run, data, error: null, loading: false }),
        (err: Error) =>
          !abort.signal.aborted &&
          err.name !== 'AbortError' &&
          setState((s) => ({ ...(s.of === run ? s : { of: run, ...LOADING }), error: err.message, loading: false })),
      )
      .finally(() => {
        if (abort.signal.aborted) return;
        busy.current = false;
        if (again.current) {
          again.current = false;
          setTick((t) => t + 1);
        }
      });
    return () => abort.abort();
  }, [run, tick]);
  const reload = useCallback(() => {
    if (busy.current) again.current = true;
    else setTick((t) => t + 1);
  }, []);
  // Until the effect above has run for new inputs, the state is still the old inputs': not shown.
  const { data, error, loading } = state.of === run ? state : LOADING;
  return { data, error, loading, reload };
}

/** An API error in words, announced to screen readers. */
export function ErrorText({ error }: { error: string | null | undefined }) {
  if (!error) return null;
  return (
    <p className="error" role="alert">
      {error}
    </p>
  );
}

export function StatusBadge({ status, label }: { status: string | null | undefined; label?: string }) {
  if (!status) return <span className="badge badge-none">none</span>;
  const kind = FAILED_REVISION_STATUSES.includes(status as RevisionStatus)
    ? 'failed'
    : status === 'DEPLOYED' || status === 'READY'
      ? 'ok'
      : TERMINAL_REVISION_STATUSES.includes(status as RevisionStatus)
        ? 'ended'
        : 'progress';
  return (
    <span className={`badge badge-${kind}`} data-status={status} aria-label={label ? `${label}: ${status}` : undefined}>
      {status}
    </span>
  );
}

/** A modal dialog (the browser's own: focus stays inside, Escape closes it). */
export function Dialog({
  title,
  open,
  onClose,
  children,
}: {
  title: string;
  open: boolean;
  onClose: () => void;
  children: ReactNode;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  const titleId = `dialog-${title.replace(/\W+/g, '-').toLowerCase()}`;
  return (
    <dialog ref={ref} aria-labelledby={titleId} onClose={onClose} onCancel={onClose}>
      {open && (
        <>
          <h2 id={titleId}>{title}</h2>
          {children}
        </>
      )}
    </dialog>
  );
}

export interface HashRoute {
  /** The page: `/deployments/<id>`. */
  path: string;
  /** The page's state (list filters), from `?…` after the path. */
  query: URLSearchParams;
}

const readHash = (): HashRoute => {
  const [path, query = ''] = (location.hash.slice(1) || '/').split('?', 2) as [string, string?];
  return { path: path || '/', query: new URLSearchParams(query) };
};

/**
 * The page's address: the part after `#` (the key never goes there, only ids and filters). A
 * new address is a history entry, so back and forward move between pages and filter sets.
 */
export function useHashRoute(): HashRoute {
  const [route, setRoute] = useState(readHash);
  useEffect(() => {
    const onChange = () => setRoute(readHash());
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

/** Goes to `path` with `query` (empty values left out), as a new history entry. */
export function navigate(path: string, query: Record<string, string | number> = {}): void {
  const params = new URLSearchParams(
    Object.entries(query)
      .filter(([, v]) => v !== '' && v !== 0)
      .map(([k, v]) => [k, String(v)]),
  );
  const search = params.toString();
  location.hash = `#${path}${search ? `?${search}` : ''}`;
}

/** Moves focus to the page's heading when the page changes, so screen readers announce it. */
export function PageHeading({ children }: { children: ReactNode }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => ref.current?.focus(), []);
  return (
    <h1 ref={ref} tabIndex={-1}>
      {children}
    </h1>
  );
}

/** A deployment's source in words; the API's name for it stays in the title. */
const SOURCE_WORDS: Record<string, string> = {
  repohost: 'Repository',
  upload: 'Uploaded source',
  external_container: 'Image on a listener',
  internal_docker: 'Pushed image',
};

export const sourceWords = (source: string): string => SOURCE_WORDS[source] ?? source;

export function SourceLabel({ source, type }: { source: string; type?: string | null }) {
  return (
    <span title={type ? `${source} (${type})` : source}>
      {sourceWords(source)}
      {type ? ` · ${type}` : ''}
    </span>
  );
}

/** Names the API gives in snake_case, in words: `repo_commit_sha` reads "Commit". */
const FIELD_WORDS: Record<string, string> = {
  repo_ref: 'Branch or ref',
  repo_commit_sha: 'Commit',
  repo_commit_message: 'Commit message',
  repo_commit_author: 'Commit author',
  graph_config_path: 'Graph config',
  image_uri: 'Image',
  cpu: 'CPU',
  memory_mb: 'Memory (MB)',
  min_scale: 'Minimum instances',
  max_scale: 'Maximum instances',
};

export const fieldWords = (name: string): string => {
  const words = FIELD_WORDS[name] ?? name.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
};

/** A configuration value in words: yes/no for booleans, JSON only for what has no simpler form. */
export const valueWords = (value: unknown): string =>
  typeof value === 'boolean'
    ? value
      ? 'Yes'
      : 'No'
    : typeof value === 'object'
      ? JSON.stringify(value)
      : String(value);

export const short = (id: string | null | undefined) => (id ? id.slice(0, 8) : '—');
