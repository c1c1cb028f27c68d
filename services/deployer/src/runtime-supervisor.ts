import { appendFile, rm } from 'node:fs/promises';
import { DelayedError, type Job } from 'bullmq';
import type { Config } from '@slipway/config';
import { deploymentDatabasePassword, SecretBox } from '@slipway/crypto';
import { queryRows, type DataSource, type EntityManager } from '@slipway/db';
import { deploymentDatabaseName, type SecretEntry } from '@slipway/domain';
import type { RevisionLogWriter } from '@slipway/jobs';
import { redactValues, type Logger } from '@slipway/logging';
import {
  instanceEnvironment,
  lastLines,
  probeHealth,
  ProcessRuntime,
  ProcessStore,
  readArtifact,
  ServingProxy,
  type Artifact,
  type HealthOutcome,
  type InstanceRecord,
} from '@slipway/runtime';
import { DeployLogTailer } from './deploy-log-tailer.js';

/** How often dead instances are looked for (and the runtime lock retried by a standby). */
const TICK_MS = 2_000;
/** Old instances keep their connections this long after the switch, then get SIGTERM… */
const DRAIN_MS = 2_000;
/** …and SIGKILL of their process group this long after that. */
const STOP_GRACE_MS = 10_000;
/** New instances nobody uses yet (failed rollout) are stopped faster. */
const DISCARD_GRACE_MS = 2_000;
/** An adopted instance that is alive but fails this many probes in a row is restarted. */
const ADOPTION_STRIKES = 5;
/** A restarted instance gets this long to answer its health probe. */
const RESTART_HEALTH_MS = 120_000;
/** Lines of a failed instance's log quoted in the revision's status_message. */
const FAILURE_LOG_LINES = 10;

/**
 * The advisory lock (two-key form: 'slip' and 1) that makes one deployer the owner of this
 * installation's local processes. Nothing else of Slipway uses advisory locks with this key.
 */
const RUNTIME_LOCK = [0x736c6970, 1] as const;
/** A job that needs the runtime owner, on a deployer that is not, comes back after this. */
const PARK_MS = 2_000;

/**
 * For a job that only the runtime owner can do (cloud-hosted rollouts and teardowns) reaching a
 * deployer that is not the owner: back to `delayed`, so any deployer picks it up again shortly.
 * A delayed job is "pending" to the reconciler, so waiting costs no attempt; the phase deadline
 * still bounds it. (BullMQ's documented way: moveToDelayed with the job's token, then DelayedError.)
 */
export function parkUntilOwner(job: Job): Promise<never> {
  return parkJob(job, PARK_MS, 'Waiting for the deployer that owns the process runtime.');
}

/** Puts the running job back to `delayed` for `ms`; the worker picks it up again afterwards. */
async function parkJob(job: Job, ms: number, reason: string): Promise<never> {
  await job.moveToDelayed(Date.now() + ms, job.token);
  throw new DelayedError(reason);
}

/** Everything needed to run a revision's instances; immutable, like the revision itself. */
export interface RevisionRuntime {
  revisionId: string;
  deploymentId: string;
  artifactRef: string;
  artifact: Artifact;
  env: Record<string, string>;
  secretValues: string[];
  /** `resource_spec.min_scale`, at least 1. */
  scale: number;
}

/** How a rollout ended. `lost`: the revision was moved on by someone else; nothing to record. */
export type RolloutOutcome = { ok: true } | { ok: false; message: string; lost?: boolean };

type StartOutcome = { ok: true; instances: InstanceRecord[] } | { ok: false; message: string };

export interface RolloutOptions {
  /** The phase guard's signal: interruption, deadline. */
  signal: AbortSignal;
  /** End of the rollout phase (epoch ms). */
  deadline: number;
  deployLog: RevisionLogWriter;
  /** The DEPLOYED transition; runs in the transaction that retires the old instances. Falsy: lost. */
  commit: (m: EntityManager) => Promise<unknown>;
}

interface RevisionRow {
  deployment_id: string;
  artifact_ref: string | null;
  resource_spec: { min_scale?: number } | null;
  secrets_sealed: string | null;
  name: string;
  database_name: string | null;
}

/**
 * The process runtime's owner inside a deployer (DESIGN "Runtimes": process).
 *
 * SINGLE NODE: local processes live on one machine, so exactly one deployer may own them. The
 * owner is whoever holds a Postgres advisory lock (session-level, on a connection kept for the
 * purpose). The lock frees itself when that deployer dies, and a standby deployer takes it on
 * its next tick. Only the owner runs cloud-hosted rollouts and teardowns (the others park those
 * jobs until an owner takes them), so every deployer of an installation must run on the same
 * machine; several machines need the kubernetes runtime instead. The lock is per control-plane
 * database: two installations on one machine need disjoint port ranges.
 *
 * The owner keeps one serving proxy per deployment on its stable `serving_port`, copies
 * instance output into deploy logs, and every few seconds: re-adopts instances recorded as
 * running (alive and healthy: no new process), restarts dead ones (same artifact, same port when
 * free), and stops leftovers of rollouts or retirements that died midway. Shutting down never
 * stops instances: they outlive the deployer and the next owner adopts them.
 */
export class RuntimeSupervisor {
  readonly runtime: ProcessRuntime;
  private readonly store: ProcessStore;
  private readonly box: SecretBox;
  /** The connection holding the runtime lock (a session-level advisory lock lives with its session). */
  private lockRunner: ReturnType<DataSource['createQueryRunner']> | null = null;
  private readonly proxies = new Map<string, ServingProxy>();
  private readonly proxyStarts = new Map<string, Promise<ServingProxy>>();
  /** Per deployment: the instances its proxy sends traffic to. */
  private readonly serving = new Map<string, Map<string, InstanceRecord>>();
  private readonly tailers = new Map<string, DeployLogTailer>();
  /** Instance ids a restart or retirement of this process is working on. */
  private readonly busy = new Set<string>();
  /** Revisions a rollout of this process is starting: supervision leaves their instances alone. */
  private readonly rollingOut = new Set<string>();
  private readonly tearingDown = new Set<string>();
  private readonly strikes = new Map<string, number>();
  private readonly backoff = new Map<string, { failures: number; notBefore: number }>();
  private readonly chains = new Map<string, Promise<unknown>>();
  private readonly revisions = new Map<string, Promise<RevisionRuntime>>();
  private readonly background = new Set<Promise<unknown>>();
  private readonly stopping = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | null = null;

  constructor(
    private readonly config: Readonly<Config>,
    private readonly dataSource: DataSource,
    private readonly log: Logger,
  ) {
    this.runtime = new ProcessRuntime(dataSource, { ...config.runtime, dataDir: config.dataDir });
    this.store = this.runtime.store;
    this.box = new SecretBox(config.secretsKey.key, config.previousSecretsKeys);
  }

  /** True while this deployer holds the runtime lock and may touch local processes. */
  get isOwner(): boolean {
    return this.lockRunner !== null;
  }

  /** First pass (lock, adoption, proxies) before the deployer takes jobs; then every TICK_MS. */
  async start(): Promise<void> {
    await this.tick();
    this.timer = setInterval(() => void this.tick(), TICK_MS);
    this.timer.unref();
  }

  /** Stops supervising and serving; the instances keep running for the next owner. */
  async stop(): Promise<void> {
    this.stopping.abort('The deployer is shutting down.');
    clearInterval(this.timer);
    await this.ticking;
    await this.relinquish();
    // Restarts and retirements in progress get a moment; the next owner finishes the rest.
    await Promise.race([Promise.allSettled([...this.background]), new Promise((r) => setTimeout(r, 2_000))]);
    await this.releaseLock();
  }

  /** A cloud-hosted revision's artifact, environment and scale. Throws ArtifactError for a bad artifact. */
  revision(revisionId: string): Promise<RevisionRuntime> {
    let found = this.revisions.get(revisionId);
    if (!found) {
      found = this.loadRevision(revisionId);
      this.revisions.set(revisionId, found);
      found.catch(() => this.revisions.delete(revisionId));
    }
    return found;
  }

  // ---------------------------------------------------------------- rollouts

  /**
   * Rolls a revision out: starts its instances and waits until each answers its health probe
   * (traffic untouched meanwhile), then switches the deployment's proxy to them and commits.
   *
   * The proxy swaps first, so that by the time the revision reads DEPLOYED it serves; `commit`
   * runs in the transaction that also marks the old instances `stopping`, and if it loses (the
   * revision was interrupted meanwhile) the swap is undone. Old instances stop after the drain,
   * in the background. On any failure every new instance is stopped again, the old ones never
   * noticed, and the message quotes the end of the failed instance's log (secrets masked).
   */
  async rollout(rev: RevisionRuntime, options: RolloutOptions): Promise<RolloutOutcome> {
    const { deploymentId, revisionId } = rev;
    this.rollingOut.add(revisionId);
    try {
      // Leftovers of an earlier attempt at this very revision (its deployer died) go first.
      await this.serialize(deploymentId, async () => {
        const leftovers = (await this.store.live({ revisionId })).filter((r) => !this.busy.has(r.id));
        await Promise.all(leftovers.map((r) => this.stopInstance(r, DISCARD_GRACE_MS)));
      });
      await this.ensureProxy(deploymentId);
      const started = await this.startInstances(rev, options);
      if (!started.ok) return started;
      const activated = await this.activate(rev, started.instances, options.commit).catch(async (err) => {
        await this.discard(started.instances);
        throw err;
      });
      if (!activated) {
        await this.discard(started.instances);
        return { ok: false, lost: true, message: 'The revision moved on before it was activated.' };
      }
      options.deployLog.line(`Traffic switched to revision ${revisionId}.`);
      return { ok: true };
    } finally {
      this.rollingOut.delete(revisionId);
    }
  }

  private async startInstances(rev: RevisionRuntime, { signal, deadline, deployLog }: RolloutOptions): Promise<StartOutcome> {
    const { deploymentId, revisionId } = rev;
    const stopAll = new AbortController();
    const onAbort = () => stopAll.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const launched: InstanceRecord[] = [];
    try {
      for (let index = 0; index < rev.scale && !signal.aborted; index++) {
        if (this.tearingDown.has(deploymentId)) throw new Error('The deployment is being deleted.');
        const { record } = await this.runtime.launch({ deploymentId, revisionId, index, artifact: rev.artifact, env: rev.env });
        launched.push(record);
        await this.ensureTailer(record, rev);
      }
      deployLog.line(`Started ${launched.length} instance(s) of ${rev.artifactRef} (ports ${launched.map((r) => r.port).join(', ')}); waiting for GET /ok.`);
      // One instance failing ends the wait for all of them.
      const outcomes = await Promise.all(
        launched.map(async (record) => {
          const outcome = await this.runtime.waitHealthy(record, deadline, stopAll.signal);
          if (!outcome.healthy) stopAll.abort('A sibling instance failed.');
          return outcome;
        }),
      );
      const failedAt = signal.aborted ? -1 : outcomes.findIndex((o) => !o.healthy);
      if (signal.aborted || failedAt >= 0 || launched.length < rev.scale) {
        const outcome: HealthOutcome = failedAt >= 0 ? outcomes[failedAt]! : { healthy: false, reason: 'aborted' };
        // The log is read before the stop, which would add the siblings' shutdown noise.
        const message = await this.failureMessage(rev, launched[Math.max(0, failedAt)], outcome, signal);
        await this.discard(launched);
        return { ok: false, message };
      }
      for (const record of launched) {
        record.status = 'running';
        await this.store.update(record.id, 'running');
      }
      deployLog.line(`All ${launched.length} instance(s) answer their health probe.`);
      return { ok: true, instances: launched };
    } catch (err) {
      await this.discard(launched);
      throw err;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  private activate(rev: RevisionRuntime, instances: InstanceRecord[], commit: (m: EntityManager) => Promise<unknown>): Promise<boolean> {
    const { deploymentId, revisionId } = rev;
    return this.serialize(deploymentId, async () => {
      const proxy = await this.ensureProxy(deploymentId);
      const before = this.serving.get(deploymentId) ?? new Map<string, InstanceRecord>();
      this.serving.set(deploymentId, new Map(instances.map((i) => [i.id, i])));
      this.refreshTargets(deploymentId, proxy);
      let old: InstanceRecord[] | null = null;
      try {
        old = await this.dataSource.transaction(async (m) => ((await commit(m)) ? new ProcessStore(m).markOthersStopping(deploymentId, revisionId) : null));
      } finally {
        if (!old) {
          this.serving.set(deploymentId, before);
          this.refreshTargets(deploymentId, proxy);
        }
      }
      if (!old) return false;
      for (const r of old) this.retire(r, DRAIN_MS);
      return true;
    });
  }

  // ---------------------------------------------------------------- teardown

  /** Teardown of a deployment: its proxy and every instance, before its database goes. */
  async teardown(deploymentId: string): Promise<void> {
    this.tearingDown.add(deploymentId);
    await this.serialize(deploymentId, async () => {
      const proxy = this.proxies.get(deploymentId) ?? (await this.proxyStarts.get(deploymentId)?.catch(() => undefined));
      this.proxies.delete(deploymentId);
      this.serving.delete(deploymentId);
      await proxy?.close();
      const live = await this.store.live({ deploymentId });
      await Promise.all(live.map((r) => this.stopInstance(r, 5_000)));
      // Its log files and HOME; the deploy logs in Postgres go with the deployment row.
      await rm(this.runtime.deploymentDir(deploymentId), { recursive: true, force: true });
    });
  }

  // ---------------------------------------------------------------- supervision

  private tick(): Promise<void> {
    if (this.ticking) return this.ticking;
    if (this.stopping.signal.aborted) return Promise.resolve();
    this.ticking = (async () => {
      try {
        if (await this.holdLock()) await this.superviseAll();
      } catch (err) {
        this.log.warn({ err }, 'runtime supervision pass failed');
      } finally {
        this.ticking = null;
      }
    })();
    return this.ticking;
  }

  /** Keeps (or takes) the runtime lock. A broken lock connection means another deployer may own it now. */
  private async holdLock(): Promise<boolean> {
    if (this.lockRunner) {
      try {
        await this.lockRunner.query('SELECT 1');
        return true;
      } catch (err) {
        this.log.error({ err }, 'lost the runtime lock connection; no longer serving local processes');
        await this.relinquish();
        await this.releaseLock();
      }
    }
    const runner = this.dataSource.createQueryRunner();
    try {
      await runner.connect();
      const [row] = await runner.query(`SELECT pg_try_advisory_lock($1::int, $2::int) AS locked`, [...RUNTIME_LOCK]);
      if (row?.locked) {
        this.lockRunner = runner;
        this.log.info('runtime lock held: this deployer runs the local processes');
        return true;
      }
    } catch (err) {
      this.log.warn({ err }, 'could not try the runtime lock');
    }
    await runner.release().catch(() => undefined);
    return false;
  }

  private async releaseLock(): Promise<void> {
    const runner = this.lockRunner;
    this.lockRunner = null;
    if (!runner) return;
    await runner.query(`SELECT pg_advisory_unlock($1::int, $2::int)`, [...RUNTIME_LOCK]).catch(() => undefined);
    await runner.release().catch(() => undefined);
  }

  /** Stops serving and following (never the instances): for shutdown or a lost lock. */
  private async relinquish(): Promise<void> {
    const proxies = [...this.proxies.values()];
    this.proxies.clear();
    this.serving.clear();
    await Promise.allSettled(proxies.map((p) => p.close()));
    const tailers = [...this.tailers.values()];
    this.tailers.clear();
    await Promise.allSettled(tailers.map((t) => t.stop()));
  }

  private async superviseAll(): Promise<void> {
    const deployments = await queryRows<{ id: string }>(
      this.dataSource.manager,
      `SELECT d.id FROM deployments d
        WHERE d.listener_id IS NULL AND d.status <> 'AWAITING_DELETE'
          AND (d.serving_port IS NOT NULL OR EXISTS (SELECT 1 FROM runtime_processes p WHERE p.deployment_id = d.id AND p.status <> 'exited'))`,
    );
    for (const { id } of deployments) {
      if (this.stopping.signal.aborted) return;
      await this.serialize(id, () => this.superviseDeployment(id)).catch((err) =>
        this.log.warn({ err, deploymentId: id }, 'supervising the deployment failed'),
      );
    }
  }

  /** One deployment, read fresh (under its chain, so it never interleaves with an activation). */
  private async superviseDeployment(deploymentId: string): Promise<void> {
    if (this.tearingDown.has(deploymentId)) return;
    const [d] = await queryRows<{ status: string; active_revision_id: string | null; serving_port: number | null }>(
      this.dataSource.manager,
      `SELECT status, active_revision_id, serving_port FROM deployments WHERE id = $1`,
      [deploymentId],
    );
    if (!d || d.status === 'AWAITING_DELETE') return;
    const proxy = d.serving_port
      ? await this.ensureProxy(deploymentId).catch((err) => {
          this.log.warn({ err, deploymentId, port: d.serving_port }, 'could not open the serving proxy');
          return null;
        })
      : null;
    const serving = this.serving.get(deploymentId) ?? new Map<string, InstanceRecord>();
    this.serving.set(deploymentId, serving);

    for (const row of await this.store.live({ deploymentId })) {
      if (this.busy.has(row.id) || this.rollingOut.has(row.revisionId)) continue;
      // Instances of the active revision are meant to run; anything else is a leftover (an
      // interrupted retirement, a rollout whose deployer died) and is stopped.
      if (row.revisionId !== d.active_revision_id || row.status === 'stopping') {
        serving.delete(row.id);
        this.retire(row, 0);
        continue;
      }
      const rev = await this.revision(row.revisionId).catch((err) => {
        this.log.warn({ err, revisionId: row.revisionId }, 'cannot load the revision of a running instance');
        return null;
      });
      if (!rev) continue;
      if (row.status === 'starting' || !this.runtime.isAlive(row)) {
        serving.delete(row.id);
        this.restart(row, rev, row.status === 'starting' ? 'was left starting by an earlier deployer' : 'exited');
        continue;
      }
      await this.ensureTailer(row, rev);
      if (serving.has(row.id)) continue;
      // Alive but not known to serve (a deployer restart): re-adopt it once it answers.
      if (await probeHealth(this.runtime.host, row.port)) {
        this.strikes.delete(row.id);
        serving.set(row.id, row);
        this.log.info({ deploymentId, instanceId: row.id, pid: row.pid, port: row.port }, 're-adopted a running instance');
      } else {
        const strikes = (this.strikes.get(row.id) ?? 0) + 1;
        this.strikes.set(row.id, strikes);
        if (strikes >= ADOPTION_STRIKES) {
          this.strikes.delete(row.id);
          this.restart(row, rev, `did not answer its health probe ${strikes} times`);
        }
      }
    }
    if (proxy) this.refreshTargets(deploymentId, proxy);
  }

  /**
   * Relaunches a dead instance in the background: what is left of its group is stopped (a dead
   * npm may leave the server holding the port), the restart is marked in its log (so in the
   * deploy log too), and it gets traffic again once it answers its health probe. Repeated
   * failures back off, up to a minute apart.
   */
  private restart(row: InstanceRecord, rev: RevisionRuntime, why: string): void {
    const backoff = this.backoff.get(row.id);
    if (backoff && backoff.notBefore > Date.now()) return;
    this.busy.add(row.id);
    this.track(async () => {
      let healthy = false;
      try {
        await this.runtime.kill(row, 1_000);
        await appendFile(row.logPath, `--- slipway: instance ${row.index} (pid ${row.pid ?? 'unknown'}) ${why}; restarting ---\n`).catch(() => undefined);
        this.log.warn({ deploymentId: row.deploymentId, instanceId: row.id, pid: row.pid, why }, 'restarting an instance');
        const { record } = await this.runtime.launch({
          deploymentId: row.deploymentId,
          revisionId: row.revisionId,
          index: row.index,
          artifact: rev.artifact,
          env: rev.env,
          existing: row,
        });
        await this.ensureTailer(record, rev);
        healthy = (await this.runtime.waitHealthy(record, Date.now() + RESTART_HEALTH_MS, this.stopping.signal)).healthy;
        if (!healthy) {
          await this.runtime.kill(record, 1_000);
          // Still meant to run: `running` with no live pid is retried on a later tick.
          await this.store.update(record.id, 'running', { pid: null });
          return;
        }
        await this.store.update(record.id, 'running');
        await this.serialize(row.deploymentId, async () => {
          const [d] = await queryRows<{ active_revision_id: string | null }>(
            this.dataSource.manager,
            `SELECT active_revision_id FROM deployments WHERE id = $1 AND status <> 'AWAITING_DELETE'`,
            [row.deploymentId],
          );
          // Moved on meanwhile: the next tick retires it like any leftover.
          if (d?.active_revision_id !== row.revisionId || this.tearingDown.has(row.deploymentId)) return;
          const serving = this.serving.get(row.deploymentId) ?? new Map<string, InstanceRecord>();
          this.serving.set(row.deploymentId, serving);
          serving.set(record.id, { ...record, status: 'running' });
          const proxy = this.proxies.get(row.deploymentId);
          if (proxy) this.refreshTargets(row.deploymentId, proxy);
        });
      } catch (err) {
        this.log.warn({ err, instanceId: row.id }, 'restarting an instance failed');
      } finally {
        if (healthy) this.backoff.delete(row.id);
        else {
          const failures = (backoff?.failures ?? 0) + 1;
          this.backoff.set(row.id, { failures, notBefore: Date.now() + Math.min(60_000, 1_000 * 2 ** failures) });
        }
        this.busy.delete(row.id);
      }
    });
  }

  /** Stops an instance after `drainMs`, in the background. */
  private retire(row: InstanceRecord, drainMs: number): void {
    if (this.busy.has(row.id)) return;
    this.busy.add(row.id);
    this.track(async () => {
      try {
        if (drainMs) await new Promise((r) => setTimeout(r, drainMs));
        await this.stopInstance(row, STOP_GRACE_MS);
        this.log.info({ deploymentId: row.deploymentId, instanceId: row.id, pid: row.pid }, 'instance stopped');
      } catch (err) {
        this.log.warn({ err, instanceId: row.id }, 'stopping an instance failed');
      } finally {
        this.busy.delete(row.id);
      }
    });
  }

  // ---------------------------------------------------------------- pieces

  private async stopInstance(row: InstanceRecord, graceMs: number): Promise<void> {
    this.strikes.delete(row.id);
    this.backoff.delete(row.id);
    await this.runtime.stop(row, graceMs);
    const tailer = this.tailers.get(row.id);
    this.tailers.delete(row.id);
    await tailer?.stop();
  }

  /** Stops instances a rollout started but will not use (failure, lost commit, error). */
  private async discard(instances: InstanceRecord[]): Promise<void> {
    await Promise.all(instances.map((i) => this.stopInstance(i, DISCARD_GRACE_MS)));
  }

  private async failureMessage(rev: RevisionRuntime, failed: InstanceRecord | undefined, outcome: HealthOutcome, signal: AbortSignal): Promise<string> {
    const which = failed ? `Instance ${failed.index} (port ${failed.port})` : 'The rollout';
    const reason =
      outcome.healthy || outcome.reason === 'aborted'
        ? `${which} was stopped: ${String(signal.reason ?? 'the rollout was cancelled.')}`
        : outcome.reason === 'exited'
          ? `${which} exited before it answered GET /ok.`
          : `${which} did not answer GET /ok within the rollout deadline.`;
    const lines = failed ? await lastLines(failed.logPath, FAILURE_LOG_LINES) : [];
    return redactValues(lines.length ? `${reason} Last log lines:\n${lines.join('\n')}` : reason, rev.secretValues);
  }

  private refreshTargets(deploymentId: string, proxy: ServingProxy): void {
    const serving = this.serving.get(deploymentId);
    proxy.setTargets([...(serving?.values() ?? [])].map((r) => ({ host: this.runtime.host, port: r.port })));
  }

  private ensureProxy(deploymentId: string): Promise<ServingProxy> {
    const open = this.proxies.get(deploymentId);
    if (open) return Promise.resolve(open);
    let starting = this.proxyStarts.get(deploymentId);
    if (!starting) {
      starting = (async () => {
        const port = await this.runtime.servingPort(deploymentId);
        const proxy = new ServingProxy({
          host: this.runtime.host,
          port,
          onError: (err, target) => this.log.warn({ err, deploymentId, target }, 'serving proxy: the instance did not answer'),
        });
        await proxy.listen();
        this.proxies.set(deploymentId, proxy);
        this.log.info({ deploymentId, port }, 'serving proxy listening');
        return proxy;
      })().finally(() => this.proxyStarts.delete(deploymentId));
      this.proxyStarts.set(deploymentId, starting);
    }
    return starting;
  }

  private async ensureTailer(row: InstanceRecord, rev: RevisionRuntime): Promise<void> {
    if (this.tailers.has(row.id)) return;
    const tailer = new DeployLogTailer(this.dataSource, row.revisionId, row.logPath, rev.secretValues);
    this.tailers.set(row.id, tailer);
    await tailer.start();
  }

  private async loadRevision(revisionId: string): Promise<RevisionRuntime> {
    const [r] = await queryRows<RevisionRow>(
      this.dataSource.manager,
      `SELECT r.deployment_id, r.artifact_ref, r.resource_spec, r.secrets_sealed, d.name, d.database_name
         FROM revisions r JOIN deployments d ON d.id = r.deployment_id WHERE r.id = $1`,
      [revisionId],
    );
    if (!r) throw new Error(`Revision ${revisionId} is gone.`);
    if (!r.artifact_ref) throw new Error(`Revision ${revisionId} has no artifact.`);
    const artifact = await readArtifact(r.artifact_ref);
    const secrets: SecretEntry[] = r.secrets_sealed ? JSON.parse(this.box.open(r.secrets_sealed, revisionId)) : [];
    return {
      revisionId,
      deploymentId: r.deployment_id,
      artifactRef: r.artifact_ref,
      artifact,
      env: instanceEnvironment({
        base: artifact.env,
        secrets,
        databaseUrl: this.config.databaseUrl,
        databaseName: r.database_name ?? deploymentDatabaseName(r.name, r.deployment_id),
        databasePassword: deploymentDatabasePassword(this.config.secretsKey.key, r.deployment_id),
        redisUrl: this.config.redisUrl,
        deploymentId: r.deployment_id,
      }),
      secretValues: secrets.map((s) => s.value),
      scale: Math.max(1, Math.floor(Number(r.resource_spec?.min_scale ?? 1)) || 1),
    };
  }

  /** Runs `work` after every earlier piece of work on the same deployment (in this process). */
  private serialize<T>(deploymentId: string, work: () => Promise<T>): Promise<T> {
    const run = (this.chains.get(deploymentId) ?? Promise.resolve()).then(work, work);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.chains.set(deploymentId, tail);
    void tail.then(() => {
      if (this.chains.get(deploymentId) === tail) this.chains.delete(deploymentId);
    });
    return run;
  }

  private track(work: () => Promise<void>): void {
    const running = work();
    this.background.add(running);
    void running.finally(() => this.background.delete(running));
  }
}
