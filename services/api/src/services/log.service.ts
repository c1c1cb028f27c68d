import { DeploymentRepository, EVENTS_CHANNEL, type DataSource, type PgNotifications } from '@slipway/db';
import { isRevisionTerminal, NotFoundError, type RevisionStatus } from '@slipway/domain';
import type { EventSink } from './event-sink.js';
import type { LogFilters, LogsBody, LogTypeInput, WorkspaceLogsQuery } from '../schemas/log.schema.js';
import {
  REVISION_LOGS_CHANNEL,
  RevisionLogRepository,
  RevisionRepository,
  type LogFilter,
  type LogScope,
  type ScopedLogLine,
} from '@slipway/pipeline';

type Line = { id: string; timestamp: string; level: string; message: string; instance?: number | null };

export interface LogPageView<L = Line> {
  logs: L[];
  next_offset: string | null;
}

/** How long a follower sleeps between reads when no notification wakes it (the fallback poll). */
const FOLLOW_IDLE_MS = 5_000;
const FOLLOW_IDLE_UNCONNECTED_MS = 1_000;
const FOLLOW_BATCH = 1000;
/**
 * A workspace follower is woken by every stored batch of any revision (the notification names
 * the revision, not its workspace): it reads at most this often, so a busy installation costs
 * each follower a few queries a second, not one per batch.
 */
const WORKSPACE_FOLLOW_MIN_MS = 200;

/** Statuses in which a revision's build may still write lines. */
const BUILD_PHASES: readonly RevisionStatus[] = ['CREATING', 'QUEUED', 'AWAITING_BUILD', 'BUILDING'];

/** `instance` only on lines an instance printed: build lines and the rollout's own keep the C5 shape. */
const presentLine = ({ id, timestamp, level, message, instance }: Line): Line => ({
  id,
  timestamp,
  level,
  message,
  ...(instance == null ? {} : { instance }),
});
const presentScoped = ({
  instance,
  ...line
}: ScopedLogLine): Omit<ScopedLogLine, 'instance'> & { instance?: number } =>
  instance == null ? line : { ...line, instance };

/** The filters of a request, as the repository takes them: empty and null mean "not given". */
function filterOf(f: LogFilters, type?: LogTypeInput): LogFilter {
  return {
    ...(type ? { type } : {}),
    ...(f.level ? { level: f.level } : {}),
    ...(typeof f.instance === 'number' ? { instance: f.instance } : {}),
    ...(f.query ? { query: f.query } : {}),
    ...(f.start_time ? { startTime: f.start_time } : {}),
    ...(f.end_time ? { endTime: f.end_time } : {}),
  };
}

const cursorOf = (offset: string | number | null | undefined): string | null =>
  offset === undefined || offset === null || offset === '' ? null : String(offset);

/**
 * Build and deploy log lines of revisions (docs/api.md, Logs): pages for the `GET .../logs`
 * routes and the `POST /v1/projects/...` routes the published CLIs call, the workspace-wide
 * listing, and following a revision's log as it grows. Reads only.
 */
export class LogService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly notifications: PgNotifications,
  ) {}

  /** One page of a revision's `type` lines; 404 for a deployment or revision outside the workspace. */
  async revisionPage(
    workspaceId: string,
    deploymentId: string,
    revisionId: string,
    type: LogTypeInput,
    page: LogsBody,
  ): Promise<LogPageView> {
    await this.revisionStatus(workspaceId, deploymentId, revisionId);
    return this.page({ revisionId }, filterOf(page, type), page, presentLine);
  }

  /** Deploy lines of the deployment's active revision, else its latest; none before the first revision. */
  async deploymentDeployPage(workspaceId: string, deploymentId: string, page: LogsBody): Promise<LogPageView> {
    const deployment = await new DeploymentRepository(this.dataSource.manager).find(workspaceId, deploymentId);
    if (!deployment) throw NotFoundError.of('Deployment', deploymentId);
    const revisionId = deployment.activeRevisionId ?? deployment.latestRevisionId;
    return revisionId
      ? this.page({ revisionId }, filterOf(page, 'deploy'), page, presentLine)
      : { logs: [], next_offset: null };
  }

  /** Lines across the workspace's deployments, optionally of one deployment or revision. */
  workspacePage(
    workspaceId: string,
    query: WorkspaceLogsQuery,
  ): Promise<LogPageView<ReturnType<typeof presentScoped>>> {
    const scope = { workspaceId, deploymentId: query.deployment_id, revisionId: query.revision_id };
    return this.page(scope, filterOf(query, query.type), query, presentScoped);
  }

  /**
   * Streams a revision's `type` lines matching the filters after the cursor `from` (all of
   * them when null), oldest first, each as an event whose id is the line's id; then new lines
   * as they are stored, until the build (type build) ends, or for deploy logs until the revision
   * no longer runs: a rollout that failed or was interrupted, or a deployed revision that is not
   * (or no longer) the active one. The active revision's log follows its instances' output for
   * as long as the client stays. Then an `end` event with the revision's status. The revision's
   * status is read before the lines, so no line written before the end is missed.
   */
  async follow(
    workspaceId: string,
    deploymentId: string,
    revisionId: string,
    type: LogTypeInput,
    filters: LogFilters,
    from: string | null,
    sink: EventSink,
  ): Promise<void> {
    await this.revisionStatus(workspaceId, deploymentId, revisionId);
    const repo = new RevisionLogRepository(this.dataSource.manager);
    const filter = filterOf(filters, type);
    let after = from;
    while (!sink.signal.aborted) {
      const { status, serving } = await this.revisionState(workspaceId, deploymentId, revisionId);
      const ended = type === 'build' ? !BUILD_PHASES.includes(status) : isRevisionTerminal(status) && !serving;
      for (;;) {
        const { lines, next } = await repo.page({ revisionId }, filter, { limit: FOLLOW_BATCH, order: 'asc', after });
        for (const line of lines) sink.send({ id: line.id, data: presentLine(line) });
        after = lines.at(-1)?.id ?? after;
        if (!next || sink.signal.aborted) break;
      }
      if (ended) {
        sink.send({ event: 'end', data: { revision_id: revisionId, status } });
        return;
      }
      const idle = this.notifications.connected ? FOLLOW_IDLE_MS : FOLLOW_IDLE_UNCONNECTED_MS;
      // New lines of this revision, or any event of the workspace (its status may have changed).
      await this.notifications.wait(
        { [REVISION_LOGS_CHANNEL]: revisionId, [EVENTS_CHANNEL]: workspaceId },
        idle,
        sink.signal,
      );
    }
  }

  /**
   * Streams the workspace's lines matching the query after the cursor `from`, then new ones as
   * they are stored, until the client leaves (no `end`: a workspace's logs never end).
   */
  async followWorkspace(
    workspaceId: string,
    query: WorkspaceLogsQuery,
    from: string | null,
    sink: EventSink,
  ): Promise<void> {
    const repo = new RevisionLogRepository(this.dataSource.manager);
    const scope = { workspaceId, deploymentId: query.deployment_id, revisionId: query.revision_id };
    const filter = filterOf(query, query.type);
    let after = from;
    while (!sink.signal.aborted) {
      const readAt = Date.now();
      for (;;) {
        const { lines, next } = await repo.page(scope, filter, { limit: FOLLOW_BATCH, order: 'asc', after });
        for (const line of lines) sink.send({ id: line.id, data: presentScoped(line) });
        after = lines.at(-1)?.id ?? after;
        if (!next || sink.signal.aborted) break;
      }
      const idle = this.notifications.connected ? FOLLOW_IDLE_MS : FOLLOW_IDLE_UNCONNECTED_MS;
      await this.notifications.wait({ [REVISION_LOGS_CHANNEL]: () => true }, idle, sink.signal);
      const early = WORKSPACE_FOLLOW_MIN_MS - (Date.now() - readAt);
      if (early > 0 && !sink.signal.aborted) await new Promise((r) => setTimeout(r, early));
    }
  }

  /**
   * `next_offset` is the id of the last line returned whenever the page has lines, not only
   * when more lines exist already: the CLIs follow a growing build log by sending it back, and
   * keep their last cursor when they get null, so null after a partial page would make them
   * start over and print every line again. Paging to the end thus ends with one empty page.
   * A RevisionLogWriter chains its inserts, so one writer's lines commit in (timestamp, id)
   * order and a follower never skips them; only two writers of the same log committing out of
   * order could hide a line from a live follower (re-reading from the start shows it).
   */
  private async page<L>(
    scope: LogScope,
    filter: LogFilter,
    page: LogsBody,
    present: (line: ScopedLogLine) => L,
  ): Promise<LogPageView<L>> {
    const { lines } = await new RevisionLogRepository(this.dataSource.manager).page(scope, filter, {
      limit: page.limit,
      order: page.order,
      after: cursorOf(page.offset),
    });
    return { logs: lines.map(present), next_offset: lines.length ? lines.at(-1)!.id : null };
  }

  /** The revision's status; 404 for a deployment or revision outside the workspace. */
  private async revisionStatus(workspaceId: string, deploymentId: string, revisionId: string): Promise<RevisionStatus> {
    return (await this.revisionState(workspaceId, deploymentId, revisionId)).status;
  }

  /** The revision's status and whether it is the deployment's serving (active, deployed) one. */
  private async revisionState(
    workspaceId: string,
    deploymentId: string,
    revisionId: string,
  ): Promise<{ status: RevisionStatus; serving: boolean }> {
    const deployment = await new DeploymentRepository(this.dataSource.manager).find(workspaceId, deploymentId);
    if (!deployment) throw NotFoundError.of('Deployment', deploymentId);
    const revision = await new RevisionRepository(this.dataSource.manager).find(deploymentId, revisionId);
    if (!revision) throw NotFoundError.of('Revision', revisionId);
    const serving =
      revision.status === 'DEPLOYED' &&
      deployment.activeRevisionId === revisionId &&
      deployment.status !== 'AWAITING_DELETE';
    return { status: revision.status, serving };
  }
}
