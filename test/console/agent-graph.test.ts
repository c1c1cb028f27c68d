import { describe, expect, it } from 'vitest';
import { checkpointOf, forkPointOf, needsHistory } from '../../services/console/app/ui/agent/fork-point.js';
import { layoutGraph, visitedNodes, visitOrder } from '../../services/console/app/ui/agent/graph-layout.js';

/** The Agent views' own logic: a graph's layers, a trace's path, where a fork starts. */

const edge = (source: string, target: string, conditional = false) => ({ source, target, conditional });
const node = (id: string) => ({ id, type: 'runnable', data: { name: id } });

/** A traced run, as much of it as the views read. */
const run = (id: string, parent: string | null, order: string, metadata: Record<string, unknown> = {}) => ({
  id,
  parent_run_id: parent,
  dotted_order: order,
  extra: { metadata },
});

describe('layoutGraph', () => {
  it('puts each node a layer below the deepest node leading to it, leaving loops out of the count', () => {
    const layout = layoutGraph({
      nodes: ['__start__', 'agent', 'tools', 'review', '__end__'].map(node),
      edges: [
        edge('__start__', 'agent'),
        edge('agent', 'tools', true),
        edge('tools', 'agent'),
        edge('agent', 'review', true),
        edge('tools', 'review'),
        edge('review', '__end__'),
      ],
    });
    const y = Object.fromEntries(layout.nodes.map((n) => [n.id, n.y]));
    expect(y.__start__).toBeLessThan(y.agent!);
    expect(y.agent).toBeLessThan(y.tools!);
    expect(y.tools).toBeLessThan(y.review!);
    expect(y.review).toBeLessThan(y.__end__!);
    expect(layout.edges.filter((e) => e.back)).toEqual([
      { source: 'tools', target: 'agent', conditional: false, back: true },
    ]);
    for (const n of layout.nodes) expect(n.x).toBeGreaterThan(0);
    expect(layout.height).toBeGreaterThan(y.__end__!);
  });

  it('places nodes of one layer side by side, and ignores edges to nodes it does not know', () => {
    const layout = layoutGraph({
      nodes: ['__start__', 'a', 'b'].map(node),
      edges: [edge('__start__', 'a'), edge('__start__', 'b'), edge('b', 'nowhere')],
    });
    const [a, b] = ['a', 'b'].map((id) => layout.nodes.find((n) => n.id === id)!);
    expect(a!.y).toBe(b!.y);
    expect(a!.x).not.toBe(b!.x);
    expect(layout.edges).toHaveLength(2);
  });
});

describe('the path of a traced graph run', () => {
  it('is the root’s node runs in dotted order, not the runs inside a node', () => {
    const runs = [
      run('root', null, '1'),
      run('second', 'root', '1.3', { langgraph_node: 'agent' }),
      run('model', 'second', '1.3.1', { langgraph_node: 'agent' }),
      run('first', 'root', '1.2', { langgraph_node: '__start__' }),
      run('third', 'root', '1.4', { langgraph_node: 'tools' }),
      run('fourth', 'root', '1.5', { langgraph_node: 'agent' }),
      run('other', 'root', '1.6'),
    ];
    const path = visitedNodes(runs, 'root');
    expect(path).toEqual(['__start__', 'agent', 'tools', 'agent']);
    expect(Object.fromEntries(visitOrder(path))).toEqual({ __start__: [1], agent: [2, 4], tools: [3] });
  });
});

describe('forkPointOf', () => {
  const common = { thread_id: 't1', assistant_id: 'a1', graph_id: 'agent' };
  it('takes a node run’s task from its checkpoint namespace, and a root run’s graph run id', () => {
    expect(
      forkPointOf(
        run('n', 'root', '1.2', { ...common, langgraph_node: 'plan', langgraph_checkpoint_ns: 'plan:task-1' }),
      ),
    ).toEqual({
      threadId: 't1',
      assistantId: 'a1',
      taskId: 'task-1',
      checkpointId: null,
      graphRunId: null,
      node: 'plan',
    });
    expect(forkPointOf(run('r', null, '1', { ...common, run_id: 'lg-run' }))).toMatchObject({
      taskId: null,
      graphRunId: 'lg-run',
      node: null,
    });
    expect(forkPointOf(run('r', null, '1', { ...common, checkpoint_id: 'cp-1' }))).toMatchObject({
      checkpointId: 'cp-1',
    });
  });

  it('offers no fork without a thread or an assistant, nor inside a subgraph', () => {
    expect(
      forkPointOf(
        run('n', 'root', '1.2', { thread_id: 't1', langgraph_node: 'plan', langgraph_checkpoint_ns: 'plan:x' }),
      ),
    ).toBeNull();
    expect(forkPointOf(run('n', 'root', '1.2', { assistant_id: 'a1', checkpoint_id: 'cp' }))).toBeNull();
    expect(
      forkPointOf(
        run('n', 'root', '1.2', { ...common, langgraph_node: 'inner', langgraph_checkpoint_ns: 'outer:x|inner:y' }),
      ),
    ).toBeNull();
  });
});

describe('checkpointOf', () => {
  const checkpoint = (id: string, step: number, runId: string, tasks: string[]) => ({
    checkpoint: { checkpoint_id: id },
    metadata: { step, run_id: runId },
    tasks: tasks.map((t) => ({ id: t })),
  });
  // Newest first, as the thread's history answers: a fork's checkpoints (run lg-2) above the first run's (lg-1).
  const history = [
    checkpoint('c5', 1, 'lg-2', ['t-ask-2']),
    checkpoint('c4', 0, 'lg-2', ['t-plan-2']),
    checkpoint('c2', 0, 'lg-1', ['t-plan']),
    checkpoint('c1', -1, 'lg-1', ['t-start']),
  ];
  const point = { threadId: 't1', assistantId: 'a1', taskId: null, checkpointId: null, graphRunId: null, node: null };

  it('finds the checkpoint that has a node run’s task, before the checkpoint its run was started from', () => {
    const node = { ...point, taskId: 't-ask-2', checkpointId: 'c3', node: 'ask' };
    expect(needsHistory(node)).toBe(true);
    expect(checkpointOf(node, history)).toBe('c5');
    expect(checkpointOf({ ...node, taskId: 'gone' }, history)).toBe('c3');
    expect(checkpointOf({ ...node, taskId: 'gone', checkpointId: null }, history)).toBeNull();
  });

  it('takes a root run’s named checkpoint as it is, else the first checkpoint of its graph run', () => {
    expect(needsHistory({ ...point, checkpointId: 'c3', graphRunId: 'lg-2' })).toBe(false);
    expect(checkpointOf({ ...point, checkpointId: 'c3', graphRunId: 'lg-2' }, [])).toBe('c3');
    expect(checkpointOf({ ...point, graphRunId: 'lg-1' }, history)).toBe('c1');
    expect(checkpointOf({ ...point, graphRunId: 'lg-9' }, history)).toBeNull();
  });
});
