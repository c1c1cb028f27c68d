/**
 * A graph of the LangGraph Server API (`GET /assistants/{id}/graph`) laid out in layers, top to
 * bottom (each node one layer below the deepest node that leads to it, loops left out of that
 * count), and the path a traced run took through it.
 */
// No imports, structural types only: the unit tests (test/console) load this file as it is.

/** What the layout reads of `AgentGraph` (api/agent.ts). */
interface GraphShape {
  nodes: Array<{ id: string | number; data?: unknown }>;
  edges: Array<{ source: string | number; target: string | number; conditional?: boolean }>;
}

/** What the path reads of a traced run (`TracedRun`, api/types.ts). */
interface RunShape {
  parent_run_id: string | null;
  dotted_order: string;
  extra?: { metadata?: Record<string, unknown> };
}

export const NODE_WIDTH = 150;
export const NODE_HEIGHT = 36;
const COLUMN = 180;
const ROW = 76;
const MARGIN = 16;

export interface PlacedNode {
  id: string;
  label: string;
  /** Centre. */
  x: number;
  y: number;
}

export interface PlacedEdge {
  source: string;
  target: string;
  conditional: boolean;
  /** Leads back up (a loop). */
  back: boolean;
}

export interface GraphLayout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  width: number;
  height: number;
}

const nodeLabel = (node: GraphShape['nodes'][number]) => {
  const name = (node.data as { name?: unknown } | undefined)?.name;
  return String(node.id) || (typeof name === 'string' ? name : '?');
};

export function layoutGraph(graph: GraphShape): GraphLayout {
  const ids = graph.nodes.map((n) => String(n.id));
  const known = new Set(ids);
  const edges = graph.edges.filter((e) => known.has(String(e.source)) && known.has(String(e.target)));
  const out = new Map<string, string[]>(ids.map((id) => [id, []]));
  for (const e of edges) out.get(String(e.source))!.push(String(e.target));
  // Loops: the edges a depth-first walk from the start finds leading back to a node still open.
  const open = new Map<string, boolean>();
  const back = new Set<string>();
  const visit = (id: string) => {
    open.set(id, true);
    for (const target of out.get(id) ?? []) {
      if (open.get(target) === true) back.add(`${id}\u0000${target}`);
      else if (!open.has(target)) visit(target);
    }
    open.set(id, false);
  };
  for (const id of [...ids].sort((a, b) => Number(b === '__start__') - Number(a === '__start__')))
    if (!open.has(id)) visit(id);
  const forward = edges.filter((e) => !back.has(`${String(e.source)}\u0000${String(e.target)}`));
  const layer = new Map<string, number>(ids.map((id) => [id, 0]));
  for (let i = 0; i < ids.length; i++) {
    let moved = false;
    for (const e of forward) {
      const next = layer.get(String(e.source))! + 1;
      if (next > layer.get(String(e.target))!) {
        layer.set(String(e.target), next);
        moved = true;
      }
    }
    if (!moved) break;
  }
  const rows = new Map<number, string[]>();
  for (const id of ids) rows.set(layer.get(id)!, [...(rows.get(layer.get(id)!) ?? []), id]);
  const widest = Math.max(1, ...[...rows.values()].map((r) => r.length));
  const width = widest * COLUMN + MARGIN * 2;
  const labels = new Map(graph.nodes.map((n) => [String(n.id), nodeLabel(n)]));
  const nodes: PlacedNode[] = [];
  for (const [row, members] of rows) {
    members.forEach((id, i) =>
      nodes.push({
        id,
        label: labels.get(id)!,
        x: width / 2 + (i - (members.length - 1) / 2) * COLUMN,
        y: MARGIN + NODE_HEIGHT / 2 + row * ROW,
      }),
    );
  }
  const depth = Math.max(0, ...layer.values());
  return {
    nodes,
    edges: edges.map((e) => ({
      source: String(e.source),
      target: String(e.target),
      conditional: !!e.conditional,
      back: back.has(`${String(e.source)}\u0000${String(e.target)}`),
    })),
    width,
    height: depth * ROW + NODE_HEIGHT + MARGIN * 2,
  };
}

/**
 * The nodes a traced graph run went through, in order: its direct children that LangGraph
 * stamped with `langgraph_node` (runs deeper down, such as a model call inside a node, carry
 * their node's name too and are left out), in dotted order.
 */
export function visitedNodes(runs: RunShape[], rootId: string): string[] {
  return runs
    .filter((r) => r.parent_run_id === rootId)
    .sort((a, b) => (a.dotted_order < b.dotted_order ? -1 : a.dotted_order > b.dotted_order ? 1 : 0))
    .map((r) => r.extra?.metadata?.langgraph_node)
    .filter((n): n is string => typeof n === 'string' && !!n);
}

/** Each visited node's places in the path (1-based). */
export function visitOrder(path: string[]): Map<string, number[]> {
  const order = new Map<string, number[]>();
  path.forEach((node, i) => order.set(node, [...(order.get(node) ?? []), i + 1]));
  return order;
}
