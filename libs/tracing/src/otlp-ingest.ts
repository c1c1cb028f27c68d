import type { Readable } from 'node:stream';
import type { DataSource } from 'typeorm';
import type { TracingIngest } from './ingest.js';
import { readOtlpTraces } from './otlp.js';
import { RunRepository } from './run.repository.js';
import { MAX_DOTTED_ORDER_CHARS } from './run-ops.js';
import { SpanTreeRepository } from './span-tree.repository.js';

/**
 * OTLP/HTTP trace ingest: the export's spans are written as run creates through TracingIngest
 * (the same validation, merge and one transaction as every other ingest), then the pieces of
 * each trace are joined.
 *
 * Joining runs in a transaction of its own, after the write commits, under a lock per OTEL trace
 * id: of two exports holding a parent and its child, whichever joins second sees both rows
 * (READ COMMITTED), so the child ends under its parent in either arrival order. A process that
 * dies between the two transactions leaves a piece unjoined until another span of it, or of its
 * parent, arrives. A piece joins a parent of its own project only: spans never cross projects, so a
 * writer bound to one project cannot graft runs into another's traces.
 */
export class OtlpTraceIngest {
  constructor(
    private readonly dataSource: DataSource,
    private readonly ingest: TracingIngest,
  ) {}

  /**
   * Decodes, writes and joins one export; `project` is the `Langsmith-Project` header (null: the
   * default project), `boundTo` the one project a bound writer may write (TracingIngest.write).
   */
  async write(
    workspaceId: string,
    headers: Record<string, unknown>,
    body: Readable,
    project: string | null,
    boundTo: string | null = null,
  ): Promise<void> {
    const { operations, otelTraceIds } = await readOtlpTraces(body, headers, this.ingest.limits, project);
    if (!operations.length) return;
    await this.ingest.write(workspaceId, operations, boundTo);
    await this.dataSource.transaction(async (m) => {
      const runs = new RunRepository(m);
      const tree = new SpanTreeRepository(m);
      await runs.lock(
        workspaceId,
        otelTraceIds.map((t) => `otel:${t}`),
      );
      const traces = new Set<string>();
      for (const { fields } of operations) {
        const id = fields.id.toLowerCase();
        // First the pieces waiting for this run, then this run's own piece (which by then holds
        // them) under its parent.
        let self = await tree.placeOf(workspaceId, id);
        if (!self) continue;
        for (const child of await tree.waitingFor(workspaceId, id, self.project_id)) {
          // A piece that holds this run is not put under it (parents sent in a cycle).
          if (child === id || self.trace_id === child) continue;
          if (!(await fits(tree, workspaceId, self.dotted_order, child))) continue;
          await tree.attach(workspaceId, child, self.trace_id, self.dotted_order);
          traces.add(self.trace_id);
        }
        self = (await tree.placeOf(workspaceId, id))!;
        if (!self.parent_run_id || self.trace_id !== id) continue;
        const parent = await tree.placeOf(workspaceId, self.parent_run_id);
        if (!parent || parent.project_id !== self.project_id || parent.trace_id === id) continue;
        if (!(await fits(tree, workspaceId, parent.dotted_order, id))) continue;
        await tree.attach(workspaceId, id, parent.trace_id, parent.dotted_order);
        traces.add(parent.trace_id);
      }
      await runs.refreshTraces(workspaceId, [...traces]);
    });
  }
}

/**
 * Whether the piece rooted at `pieceRoot` may go under a run placed at `parentDotted`: no run of
 * it may end up with a dotted order longer than a create may carry (MAX_DOTTED_ORDER_CHARS), so a
 * client cannot grow a trace without bound by sending deeper and deeper chains in turn. A piece
 * that does not fit stays a trace of its own.
 */
async function fits(
  tree: SpanTreeRepository,
  workspaceId: string,
  parentDotted: string,
  pieceRoot: string,
): Promise<boolean> {
  return parentDotted.length + 1 + (await tree.longestDottedOrder(workspaceId, pieceRoot)) <= MAX_DOTTED_ORDER_CHARS;
}
