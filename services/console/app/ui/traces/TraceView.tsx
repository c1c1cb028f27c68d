import type { AgentApi } from '../../api/agent';
import type { Api } from '../../api/client';
import type { TracedRun } from '../../api/types';
import { formatTime } from '../../phases';
import { CopyButton } from '../ApiCall';
import { ForkRun } from '../agent/ForkRun';
import { GraphPath } from '../agent/GraphPath';
import { ErrorText, useApi, useLoad } from '../common';
import { seconds, tokens } from './format';
import { loadTraceRuns, metadataText, runSeconds } from './load';
import { TraceStatus } from './TraceStatus';

/** Deeper runs stop indenting here, so a deep tree still leaves room for names on a phone. */
const MAX_INDENT = 8;

interface PlacedRun {
  run: TracedRun;
  depth: number;
  /** The run's bar, as fractions of the trace's span: where it starts and how long it is. */
  from: number;
  width: number;
}

/**
 * Each run's depth in the tree and its place on the trace's time line. A dotted order has one
 * segment per ancestor, so its length is the depth; a pending run's bar reaches the trace's end.
 */
export function placeRuns(runs: TracedRun[], now = Date.now()): PlacedRun[] {
  if (!runs.length) return [];
  const starts = runs.map((r) => Date.parse(r.start_time));
  const ends = runs.map((r, i) => (r.end_time ? Date.parse(r.end_time) : Math.max(now, starts[i]!)));
  const t0 = Math.min(...starts);
  const span = Math.max(Math.max(...ends) - t0, 1);
  const depths = runs.map((r) => r.dotted_order.split('.').length);
  const top = Math.min(...depths);
  return runs.map((run, i) => ({
    run,
    depth: depths[i]! - top,
    from: (starts[i]! - t0) / span,
    width: (ends[i]! - starts[i]!) / span,
  }));
}

/** A run's bar on the trace's time line (SVG, so the console's style policy needs no inline CSS). */
function Bar({ placed }: { placed: PlacedRun }) {
  // At least a sliver, so an instant run is still seen.
  const width = Math.max(placed.width * 1_000, 4);
  return (
    <svg className="run-bar" viewBox="0 0 1000 10" preserveAspectRatio="none" aria-hidden="true" focusable="false">
      <rect
        className={`run-bar-${placed.run.status}`}
        x={Math.min(placed.from * 1_000, 1_000 - width)}
        y="1"
        width={width}
        height="8"
        rx="2"
      />
    </svg>
  );
}

function Waterfall({
  placed,
  selectedId,
  runHref,
}: {
  placed: PlacedRun[];
  selectedId: string;
  runHref: (runId: string) => string;
}) {
  return (
    <ol className="waterfall" aria-label="Runs of this trace, in tree order">
      {placed.map((p) => (
        <li
          key={p.run.id}
          data-run-id={p.run.id}
          data-depth={p.depth}
          className={p.run.status === 'error' ? 'run-failed' : undefined}
        >
          <a href={runHref(p.run.id)} aria-current={p.run.id === selectedId ? 'true' : undefined}>
            <span className="run-label" style={{ paddingLeft: `${Math.min(p.depth, MAX_INDENT)}rem` }}>
              <span className="run-name">{p.run.name}</span> <span className="run-type">{p.run.run_type}</span>{' '}
              <TraceStatus status={p.run.status} /> <span className="run-time">{seconds(runSeconds(p.run))}</span>
            </span>
            <Bar placed={p} />
          </a>
        </li>
      ))}
    </ol>
  );
}

/** JSON as it came, pretty-printed, in a box that scrolls by itself (never the page). */
function Json({ label, value }: { label: string; value: unknown }) {
  return (
    <>
      <h4>{label}</h4>
      <pre className="json" role="region" aria-label={label} tabIndex={0}>
        {value === undefined || value === null ? 'none' : JSON.stringify(value, null, 2)}
      </pre>
    </>
  );
}

/** Where a run's thread leads: its traces, and (on an agent deployment) the thread itself. */
interface ThreadLinks {
  threadHref: (threadId: string) => string;
  /** The deployment's agent, when its URL speaks the LangGraph Server API. */
  agent: AgentApi | null;
  threadPageHref: (threadId: string) => string;
}

function RunDetails({ runId, threadHref, agent, threadPageHref }: { runId: string } & ThreadLinks) {
  const api = useApi();
  const run = useLoad((signal) => api.get<TracedRun>(`/api/v1/runs/${runId}`, undefined, signal), [api, runId]);
  if (!run.data) return run.error ? <ErrorText error={run.error} /> : <p role="status">Loading the run…</p>;
  const r = run.data;
  const threadId = r.thread_id ?? metadataText(r, 'thread_id');
  const revisionId = metadataText(r, 'revision_id');
  const facts: Array<[string, string]> = [
    ['Type', r.run_type],
    ['Started', formatTime(r.start_time)],
    ['Ended', r.end_time ? formatTime(r.end_time) : 'not yet'],
    ['Duration', seconds(runSeconds(r))],
    ['Prompt tokens', tokens(r.prompt_tokens)],
    ['Completion tokens', tokens(r.completion_tokens)],
    ['Total tokens', tokens(r.total_tokens)],
  ];
  return (
    <section className="run-details" aria-labelledby="run-title">
      <h3 id="run-title">
        Run {r.name} <TraceStatus status={r.status} />
      </h3>
      <dl className="config">
        {facts.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
        {revisionId && (
          <div>
            <dt>Revision</dt>
            <dd>
              <code>{revisionId}</code>
            </dd>
          </div>
        )}
        {threadId && (
          <div className="wide">
            <dt>Thread</dt>
            <dd>
              <code>{threadId}</code> <CopyButton text={threadId} label="Copy thread id" />{' '}
              {agent && (
                <>
                  <a href={threadPageHref(threadId)}>Open thread</a>{' '}
                </>
              )}
              <a href={threadHref(threadId)}>Traces of this thread</a>
            </dd>
          </div>
        )}
      </dl>
      {agent && <ForkRun agent={agent} run={r} threadPageHref={threadPageHref} />}
      {r.error && (
        <>
          <h4>Error</h4>
          <pre className="json run-error" role="region" aria-label="Error" tabIndex={0}>
            {r.error}
          </pre>
        </>
      )}
      <Json label="Inputs" value={r.inputs} />
      <Json label="Outputs" value={r.outputs} />
      <Json label="Metadata" value={r.extra?.metadata ?? {}} />
    </section>
  );
}

/** A run of a LangGraph agent server: its metadata names the assistant or graph that ran. */
const isGraphRun = (run: TracedRun) => !!(metadataText(run, 'assistant_id') ?? metadataText(run, 'graph_id'));

async function loadTrace(api: Api, traceId: string, signal: AbortSignal) {
  const { runs, complete } = await loadTraceRuns(api, traceId, signal);
  return { placed: placeRuns(runs), complete };
}

/**
 * One trace: its runs as a waterfall (indented by depth, a bar each on the trace's time line),
 * and the selected run's details (the root's until another is chosen; the choice is in the address).
 */
export function TraceView({
  traceId,
  runId,
  runHref,
  listHref,
  ...links
}: {
  traceId: string;
  runId: string | null;
  runHref: (runId: string) => string;
  listHref: string;
} & ThreadLinks) {
  const api = useApi();
  const trace = useLoad((signal) => loadTrace(api, traceId, signal), [api, traceId]);
  const root = trace.data?.placed[0]?.run;
  const selected = runId ?? root?.id ?? null;
  return (
    <section aria-labelledby="trace-title" className="trace">
      <p>
        <a href={listHref}>Back to the traces</a>
      </p>
      <h2 id="trace-title">Trace {root ? root.name : <code>{traceId}</code>}</h2>
      <ErrorText error={trace.error} />
      {!trace.data ? (
        !trace.error && <p role="status">Loading the trace…</p>
      ) : !root ? (
        <p>This trace has no runs (it may have passed the retention window).</p>
      ) : (
        <>
          <p>
            <TraceStatus status={root.status} /> {trace.data.placed.length} runs, {seconds(runSeconds(root))}, started{' '}
            {formatTime(root.start_time)}
          </p>
          {!trace.data.complete && <p className="note">Only the first {trace.data.placed.length} runs are shown.</p>}
          {links.agent && isGraphRun(root) && (
            <GraphPath agent={links.agent} root={root} runs={trace.data.placed.map((p) => p.run)} />
          )}
          <Waterfall placed={trace.data.placed} selectedId={selected!} runHref={runHref} />
          {selected && <RunDetails key={selected} runId={selected} {...links} />}
        </>
      )}
    </section>
  );
}
