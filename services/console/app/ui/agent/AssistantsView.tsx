import { useState } from 'react';
import type { AgentApi, Assistant } from '../../api/agent';
import { formatTime } from '../../phases';
import { ErrorText, useLoad } from '../common';
import { layoutGraph } from './graph-layout';
import { GraphSvg } from './GraphPath';

/** One assistant's versions, newest first, and its graph drawn. */
function AssistantDetails({ agent, assistant }: { agent: AgentApi; assistant: Assistant }) {
  const versions = useLoad(
    (signal) => agent.assistantVersions(assistant.assistant_id, signal),
    [agent, assistant.assistant_id],
  );
  const graph = useLoad((signal) => agent.graph(assistant.assistant_id, signal), [agent, assistant.assistant_id]);
  const name = assistant.name ?? assistant.graph_id;
  return (
    <div className="assistant-details">
      <h4>Versions</h4>
      <ErrorText error={versions.error} />
      {versions.data && (
        <ol className="versions" aria-label={`Versions of ${name}, newest first`}>
          {versions.data.map((v) => (
            <li key={`${v.assistant_id}-${v.version}`}>
              version {v.version ?? '—'} · {formatTime(v.updated_at ?? v.created_at)}
            </li>
          ))}
        </ol>
      )}
      <h4>Graph</h4>
      <ErrorText error={graph.error && `The graph could not be read: ${graph.error}`} />
      {graph.data && (
        <div className="graph-scroll" role="region" aria-label={`Graph of ${name}, scrollable`} tabIndex={0}>
          <GraphSvg layout={layoutGraph(graph.data)} path={[]} label={`Graph ${assistant.graph_id}`} />
        </div>
      )}
    </div>
  );
}

/** The agent's assistants (docs/console.md, Agent): each with its graph, version and when it changed; one opened shows its versions and graph. */
export function AssistantsView({ agent }: { agent: AgentApi }) {
  const assistants = useLoad((signal) => agent.searchAssistants(50, signal), [agent]);
  const [open, setOpen] = useState<string | null>(null);
  return (
    <section aria-labelledby="assistants-title">
      <h2 id="assistants-title">Assistants</h2>
      <ErrorText error={assistants.error} />
      {!assistants.data ? (
        !assistants.error && <p role="status">Loading assistants…</p>
      ) : !assistants.data.length ? (
        <p className="empty-state">No assistants.</p>
      ) : (
        <ul className="assistants">
          {assistants.data.map((a) => (
            <li key={a.assistant_id} data-assistant-id={a.assistant_id}>
              <button
                type="button"
                className="secondary"
                aria-expanded={open === a.assistant_id}
                onClick={() => setOpen(open === a.assistant_id ? null : a.assistant_id)}
              >
                {a.name ?? a.graph_id}
              </button>{' '}
              graph <code>{a.graph_id}</code> · version {a.version ?? '—'} · updated {formatTime(a.updated_at)}
              {open === a.assistant_id && <AssistantDetails agent={agent} assistant={a} />}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
