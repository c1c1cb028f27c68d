import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '@slipway/config';
import { DeploymentRepository, type DataSource } from '@slipway/db';
import { uploadFilePath } from '@slipway/source';
import { TracingRetention, type TracingRetentionReport } from '@slipway/tracing';
import { ArtifactRetention } from './artifact-retention.js';
import type { Logger } from '@slipway/logging';
import { RetentionRepository } from './retention.repository.js';

export interface RetentionReport {
  /** Revisions whose artifact was pruned. */
  artifactsPruned: string[];
  logLinesTrimmed: number;
  eventsDeleted: number;
  outboxRowsDeleted: number;
  /** Object paths of uploads removed. */
  uploadsDeleted: string[];
  /** Traces past their workspace's window: partitions dropped, rows deleted. */
  traces: TracingRetentionReport;
}

/**
 * The retention pass (docs/operations.md, Quotas and retention), the `retention.prune` job on the
 * `maintenance` queue, run on a schedule by any worker process. Safe to run concurrently: every
 * step is a bounded delete or a conditional update under the deployment lock.
 * - built artifacts beyond each deployment's `artifacts_kept` (the active revision's never
 *   counts): forgotten in the database first, then their files removed;
 * - log lines beyond `log_lines_per_revision`, then beyond the workspace's `log_lines_total`,
 *   oldest first;
 * - events older than the configured days, outbox rows sent longer ago than the configured hours;
 * - uploads no revision needs: never completed a day after their URL expired, or completed and
 *   named by no revision for the configured days;
 * - traces past their workspace's `trace_retention_days` (TracingRetention, docs/tracing.md):
 *   whole daily partitions dropped, never a row-by-row delete over the runs tables.
 */
export class Retention {
  constructor(
    private readonly dataSource: DataSource,
    private readonly config: Pick<Config, 'quotas' | 'retention' | 'dataDir' | 'uploadUrlTtlMs'>,
    private readonly log: Logger,
  ) {}

  async run(): Promise<RetentionReport> {
    const report: RetentionReport = {
      artifactsPruned: await this.artifacts(),
      logLinesTrimmed: await this.logs(),
      eventsDeleted: await this.repo().deleteEventsBefore(this.config.retention.eventsDays),
      outboxRowsDeleted: await this.repo().deleteSentOutboxBefore(this.config.retention.outboxHours),
      uploadsDeleted: await this.uploads(),
      traces: await new TracingRetention(this.dataSource, this.config.quotas.traceRetentionDays).run(),
    };
    const { traces } = report;
    const tracesRemoved =
      traces.partitionsDropped.length || traces.rowsDeleted || traces.tracesDeleted || traces.pendingUpdatesDeleted;
    if (traces.daysPostponed.length)
      this.log.warn(
        { days: traces.daysPostponed },
        'trace partitions past retention were busy; the next pass drops them',
      );
    if (
      report.artifactsPruned.length ||
      report.logLinesTrimmed ||
      report.eventsDeleted ||
      report.outboxRowsDeleted ||
      report.uploadsDeleted.length ||
      tracesRemoved
    ) {
      this.log.info(
        {
          retention: {
            ...report,
            artifactsPruned: report.artifactsPruned.length,
            uploadsDeleted: report.uploadsDeleted.length,
          },
        },
        'retention pass removed old data',
      );
    }
    return report;
  }

  private repo(): RetentionRepository {
    return new RetentionRepository(this.dataSource.manager);
  }

  private async artifacts(): Promise<string[]> {
    const pruned: string[] = [];
    const root = path.join(this.config.dataDir, 'artifacts');
    for (const deploymentId of await new ArtifactRetention(this.dataSource.manager).deploymentsOverArtifactQuota(
      this.config.quotas,
    )) {
      const gone = await this.dataSource.transaction(async (m) => {
        // The lock a redeploy takes: it either copied the ref already (and the ref is kept) or
        // sees it gone and rebuilds.
        await new DeploymentRepository(m).lock(deploymentId);
        return new ArtifactRetention(m).pruneArtifacts(deploymentId, this.config.quotas);
      });
      for (const { revisionId, artifactRef } of gone) {
        // Only ever under the artifacts directory, whatever the row says.
        const dir = path.resolve(artifactRef);
        if (path.dirname(dir) === root) await rm(dir, { recursive: true, force: true });
        pruned.push(revisionId);
      }
    }
    return pruned;
  }

  /** Uploads no revision needs (abandoned, or unused for days): rows first, then files (and any `.part`). */
  private async uploads(): Promise<string[]> {
    const abandonedSeconds = Math.ceil(this.config.uploadUrlTtlMs / 1000) + 24 * 3600;
    const gone = await this.dataSource.transaction((m) =>
      new RetentionRepository(m).pruneUploads(abandonedSeconds, this.config.retention.uploadsUnusedDays),
    );
    for (const objectPath of gone) {
      const file = uploadFilePath(this.config.dataDir, objectPath);
      await rm(file, { force: true });
      await rm(`${file}.part`, { force: true });
    }
    return gone;
  }

  private async logs(): Promise<number> {
    let trimmed = 0;
    for (const { revisionId, kept } of await this.repo().revisionsOverLogQuota(this.config.quotas)) {
      trimmed += await this.repo().trimRevisionLogs(revisionId, kept);
    }
    for (const { workspaceId, excess } of await this.repo().workspacesOverLogQuota(this.config.quotas)) {
      trimmed += await this.repo().trimWorkspaceLogs(workspaceId, excess);
    }
    return trimmed;
  }
}
