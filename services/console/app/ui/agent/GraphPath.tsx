import { useId } from 'react';
import type { AgentApi } from '../../api/agent';
import type { TracedRun } from '../../api/types';
import { ErrorText, useLoad } from '../common';
import {
  layoutGraph,
  NODE_HEIGHT,
  NODE_WIDTH,
  visitedNodes,
  visitOrder,
  type GraphLayout,
  type PlacedNode,
} from './graph-layout';

const ordinal = (n: number) =>
  `${n}${n % 10 === 1 && n % 100 !== 11 ? 'st' : n % 10 === 2 && n % 100 !== 12 ? 'nd' : n % 10 === 3 && n % 100 !== 13 ? 'rd' : 'th'}`;
const shortLabel = (label: string) => (label.length > 18 ? `${label.slice(0, 17)}…` : label);

/** An edge from the bottom of one node to the top of the next; a loop goes round the right side. */
function edgePath(from: PlacedNode, to: PlacedNode, back: boolean): string {
  if (back) {
    const side = Math.max(from.x, to.x) + NODE_WIDTH / 2 + 18;
    return `M ${from.x + NODE_WIDTH / 2} ${from.y} C ${side} ${from.y}, ${side} ${to.y}, ${to.x + NODE_WIDTH / 2} ${to.y}`;
  }
  return `M ${from.x} ${from.y + NODE_HEIGHT / 2} L ${to.x} ${to.y - NODE_HEIGHT / 2 - 3}`;
}

export function GraphSvg({ layout, path, label }: { layout: GraphLayout; path: string[]; label: string }) {
  const arrow = `arrow-${useId().replace(/:/g, '')}`;
  const order = visitOrder(path);
  const byId = new Map(layout.nodes.map((n) => [n.id, n]));
  const taken = new Set(path.slice(1).map((node, i) => `${path[i]}\u0000${node}`));
  return (
    <svg
      className="graph"
      viewBox={`0 0 ${layout.width} ${layout.height}`}
      width={layout.width}
      role="group"
      aria-label={label}
    >
      <defs>
        <marker
          id={arrow}
          viewBox="0 0 10 10"
          refX="9"
          refY="5"
          markerUnits="userSpaceOnUse"
          markerWidth="10"
          markerHeight="10"
          orient="auto-start-reverse"
        >
          <path d="M 0 0 L 10 5 L 0 10 z" className="graph-arrow" />
        </marker>
      </defs>
      {layout.edges.map((e) => (
        <path
          key={`${e.source}-${e.target}`}
          d={edgePath(byId.get(e.source)!, byId.get(e.target)!, e.back)}
          className={`graph-edge${e.conditional ? ' conditional' : ''}${taken.has(`${e.source}\u0000${e.target}`) ? ' taken' : ''}`}
          markerEnd={`url(#${arrow})`}
          aria-hidden="true"
        />
      ))}
      {layout.nodes.map((n) => {
        const places = order.get(n.id) ?? [];
        const description = places.length ? `visited ${places.map(ordinal).join(' and ')}` : 'not visited';
        return (
          <g
            key={n.id}
            role="img"
            aria-label={`${n.label}: ${description}`}
            data-node={n.id}
            data-order={places.join(',') || undefined}
            className={`graph-node${places.length ? ' visited' : ''}`}
          >
            <rect x={n.x - NODE_WIDTH / 2} y={n.y - NODE_HEIGHT / 2} width={NODE_WIDTH} height={NODE_HEIGHT} rx="8" />
            <text x={n.x} y={n.y + 5} textAnchor="middle">
              {shortLabel(n.label)}
            </text>
            {places.length > 0 && (
              <>
                <circle cx={n.x + NODE_WIDTH / 2} cy={n.y - NODE_HEIGHT / 2} r="11" className="graph-order" />
                <text
                  x={n.x + NODE_WIDTH / 2}
                  y={n.y - NODE_HEIGHT / 2 + 4}
                  textAnchor="middle"
                  className="graph-order-text"
                >
                  {places.length > 1 ? `${places[0]}+` : places[0]}
                </text>
              </>
            )}
          </g>
        );
      })}
    </svg>
  );
}

/**
 * The agent's graph (read from the deployment's URL) with the path this trace's run took drawn on
 * it: the nodes it visited highlighted and numbered in order, the edges between them stressed,
 * and the same path as a list.
 */
export function GraphPath({ agent, root, runs }: { agent: AgentApi; root: TracedRun; runs: TracedRun[] }) {
  const meta = root.extra?.metadata ?? {};
  const assistantId = [meta.assistant_id, meta.graph_id].find((v): v is string => typeof v === 'string' && !!v) ?? '';
  const graph = useLoad((signal) => agent.graph(assistantId, signal), [agent, assistantId]);
  const path = visitedNodes(runs, root.id);
  const graphName = typeof meta.graph_id === 'string' ? meta.graph_id : assistantId;
  return (
    <section aria-labelledby="graph-title" className="graph-path">
      <h3 id="graph-title">The path this run took</h3>
      {graph.error && <ErrorText error={`The graph could not be read from the deployment: ${graph.error}`} />}
      {!graph.data ? (
        !graph.error && <p role="status">Loading the graph…</p>
      ) : (
        <div className="graph-scroll" role="region" aria-label="Graph, scrollable" tabIndex={0}>
          <GraphSvg
            layout={layoutGraph(graph.data)}
            path={path}
            label={`Graph ${graphName}, the nodes this run visited numbered in order`}
          />
        </div>
      )}
      {path.length ? (
        <ol className="path" aria-label="Nodes visited, in order">
          {path.map((node, i) => (
            <li key={i}>{node}</li>
          ))}
        </ol>
      ) : (
        <p>No node runs in this trace.</p>
      )}
    </section>
  );
}
