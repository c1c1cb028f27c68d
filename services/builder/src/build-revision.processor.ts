import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { UnrecoverableError } from 'bullmq';
import type { Config } from '@slipway/config';
import type { SecretsCodec } from '@slipway/crypto';
import type { DataSource, EntityManager } from '@slipway/db';
import {
  artifactUri,
  isRevisionTerminal,
  toStorableText,
  type ArtifactManifest,
  type SecretEntry,
} from '@slipway/domain';
import type { JobHandler } from '@slipway/jobs';
import type { Logger } from '@slipway/logging';
import {
  PhaseGuard,
  RevisionLogWriter,
  RevisionReads,
  RevisionRepository,
  type BuildRow,
  type RevisionFlow,
} from '@slipway/pipeline';
import type { Sandbox } from '@slipway/runtime';
import {
  BuildError,
  buildCommandFor,
  buildEnv,
  BuildLog,
  buildPaths,
  dependencyDirs,
  graphConfigEnv,
  installCommandFor,
  loadGraphConfig,
  readPackageJson,
  publishArtifact,
  type BuildPaths,
} from './build-steps.js';
import { authPath, checkNodeVersion, detectProjectKind } from './agent-project.js';
import { fetchSource, type CloneAccess } from './build-source.js';
import { agentServerStart, copyAgentServerHost } from './agent-server-host.js';
import { assertRealDirectory, SandboxedBuildJail, unsandboxedJail, type BuildJail } from './build-sandbox.js';
import { BuildQuota } from './build-quota.js';
import { DependencyCache } from './dependency-cache.js';
import { checkGraphs } from './graph-check.js';
import type { AgentServerHostInstall } from './host-install.js';
import { BuildStepRunner } from './build-step-runner.js';
import { BuildVerdict, OwnershipLost } from './build-verdict.js';

export type { CloneAccess } from './build-source.js';

const DEFAULT_GRAPH_CONFIG_PATH = 'langgraph.json';

/** What a build needs of its revision and deployment, loaded once. */

export interface BuilderDeps {
  config: Readonly<Config>;
  dataSource: DataSource;
  flow: RevisionFlow;
  secrets: SecretsCodec;
  /**
   * How a repohost deployment's repository may be cloned: its integration's provider checks
   * the URL (transport and host) and gives credentials (`integrationCloneAccess`). Required:
   * without it nothing says which transports a clone may use.
   */
  cloneAccess: (build: BuildRow) => Promise<CloneAccess>;
  /** Steps run in it as the deployment's uid; null: as the builder's user (docs/operations.md, Sandbox). */
  sandbox: Sandbox | null;
  /** The agent server's dependencies, installed once for the whole process and copied into each agent artifact. */
  hostInstall: AgentServerHostInstall;
}

/**
 * `build.revision`: claims the revision (AWAITING_BUILD → BUILDING, conditional: a duplicate
 * or stale job does nothing), then fetches the source (git at `repo_ref`, or the uploaded
 * tarball), records the commit, validates the graph config, runs the install and build
 * commands, publishes the artifact, and hands the revision to the rollout queue through the
 * outbox in the same transaction that moves it to AWAITING_DEPLOY.
 *
 * A PhaseGuard heart-beats the revision and aborts the work when it is interrupted or past its
 * deadline; the abort kills the command's whole process group. Every failure ends in
 * BUILD_FAILED with a status_message saying what failed and the last log lines (redacted).
 */
export function buildRevisionProcessor(deps: BuilderDeps): JobHandler<'build.revision'> {
  return async ({ revisionId, attempt, requestId }, { log }) => {
    const rev = await new RevisionReads(deps.dataSource.manager).loadForBuild(revisionId);
    if (!rev || isRevisionTerminal(rev.status) || rev.attempt !== attempt) {
      log.info({ status: rev?.status, currentAttempt: rev?.attempt }, 'build job is stale; nothing to do');
      return;
    }
    const claimed = await deps.dataSource.transaction((m) =>
      deps.flow.begin(m, revisionId, 'build', { attempt, message: 'Building.', set: { heartbeatAt: new Date() } }),
    );
    if (!claimed) {
      log.info({ status: rev.status }, 'revision was not waiting for a build; nothing to do');
      return;
    }
    await new RevisionBuild(deps, revisionId, attempt, rev, log).run(requestId);
  };
}

/** One attempt at building one revision. */
class RevisionBuild {
  private readonly paths: BuildPaths;
  private readonly guard: PhaseGuard;
  private readonly quota: BuildQuota;
  private buildLog!: BuildLog;
  private jail!: BuildJail;
  private steps!: BuildStepRunner;

  constructor(
    private readonly deps: BuilderDeps,
    private readonly revisionId: string,
    private readonly attempt: number,
    private readonly rev: BuildRow,
    private readonly log: Logger,
  ) {
    this.paths = buildPaths(deps.config.dataDir, revisionId, attempt, rev.deployment_id);
    this.guard = new PhaseGuard(deps.dataSource, revisionId, ['BUILDING'], deps.config.pipeline, attempt);
    this.quota = new BuildQuota(this.paths, deps.config.sandbox.build.diskMb, this.guard.signal);
  }

  async run(requestId: string | undefined): Promise<void> {
    await this.guard.start();
    let secrets: SecretEntry[] = [];
    let secretsProblem: string | null = null;
    try {
      secrets = this.deps.secrets.openSecrets(this.rev.secrets_sealed, this.revisionId);
    } catch (err) {
      secretsProblem = `The revision's secrets could not be decrypted (${(err as Error).message}); was SLIPWAY_SECRETS_KEY changed?`;
    }
    this.buildLog = new BuildLog(
      new RevisionLogWriter(
        this.deps.dataSource,
        this.revisionId,
        'build',
        secrets.map((s) => s.value),
      ),
      secrets.map((s) => s.value),
    );
    const verdict = new BuildVerdict({
      dataSource: this.deps.dataSource,
      flow: this.deps.flow,
      revisionId: this.revisionId,
      attempt: this.attempt,
      artifact: this.paths.artifact,
      buildDeadlineMs: this.deps.config.pipeline.buildDeadlineMs,
      guard: this.guard,
      buildLog: this.buildLog,
      log: this.log,
    });

    // The verdict is applied last, after the log is flushed and the build directory removed:
    // whoever sees the final status (a CLI polling it) then finds the whole build log.
    let conclude: () => Promise<string | null>;
    try {
      if (secretsProblem) throw new BuildError(secretsProblem);
      await rm(this.paths.work, { recursive: true, force: true });
      await mkdir(path.dirname(this.paths.work), { recursive: true, mode: 0o700 });
      await mkdir(this.paths.home, { recursive: true, mode: 0o700 });
      const trimmed = await this.quota.trimNpmCache();
      if (trimmed) this.buildLog.line(trimmed);
      this.jail = await this.openJail();
      this.steps = new BuildStepRunner({
        jail: this.jail,
        quota: this.quota,
        buildLog: this.buildLog,
        dependencies: DependencyCache.of(this.deps.config.dataDir, this.rev.deployment_id),
        hostInstall: this.deps.hostInstall,
        workDir: this.paths.work,
        log: this.log,
      });
      const { commit, agentServer } = await this.build(secrets);
      conclude = () => verdict.handToRollout(commit, agentServer, requestId);
    } catch (err) {
      conclude = this.guard.signal.aborted || err instanceof OwnershipLost ? verdict.stopped(err) : verdict.failed(err);
    }
    this.guard.stop();
    await this.jail?.release().catch((err) => this.log.warn({ err }, 'could not remove the build cgroup'));
    await this.buildLog.close().catch((err) => this.log.warn({ err }, 'could not write the last build log lines'));
    await rm(this.paths.work, { recursive: true, force: true }).catch((err) =>
      this.log.warn({ err }, 'could not remove the build directory'),
    );
    const failure = await conclude();
    // The revision is marked failed once (by `conclude`); the job fails too, so queue dashboards show why.
    if (failure) throw new UnrecoverableError(failure);
  }

  /** Fetch, validate, install, build, publish the artifact; returns the commit built. */
  private async build(secrets: SecretEntry[]): Promise<{ commit: string | null; agentServer: boolean }> {
    const { signal } = this.guard;
    const config = this.rev.source_revision_config ?? {};
    const { sourceRoot, commit, commitMessage, commitAuthor, where, manifestSource } = await fetchSource(
      {
        rev: this.rev,
        paths: this.paths,
        log: this.buildLog,
        config: this.deps.config,
        manager: this.deps.dataSource.manager,
        cloneAccess: this.deps.cloneAccess,
      },
      signal,
    );
    if (commit) await this.recordCommit(commit, commitMessage ?? '', commitAuthor ?? '');
    await this.quota.check('after fetching the source');

    const graphConfigPath = config.graph_config_path || DEFAULT_GRAPH_CONFIG_PATH;
    const graph = await loadGraphConfig(sourceRoot, graphConfigPath, where, {
      optional: graphConfigPath === DEFAULT_GRAPH_CONFIG_PATH,
    });
    this.buildLog.line(
      graph.relativePath === null
        ? `No graph config file (${graphConfigPath}) at ${where}: a plain app.`
        : `Graph config ${graph.relativePath}: graphs ${Object.keys(graph.config.graphs).join(', ')}`,
    );
    const appRel = path.relative(sourceRoot, graph.appDir).split(path.sep).join('/') || '.';
    const appLabel = appRel === '.' ? 'the source root' : `'${appRel}'`;
    const found = await readPackageJson(graph.appDir, appLabel);
    const kind = detectProjectKind(graph.config, found, appLabel);
    const pkg = found!;
    checkNodeVersion(graph.config.node_version);
    this.buildLog.line(
      kind === 'server'
        ? 'package.json has a "start" script: the app runs its own server (`npm run start`).'
        : 'No "start" script: the graphs are served by the LangGraph.js agent server.',
    );

    const env = buildEnv(this.jail, secrets);
    let start: ArtifactManifest['start'] = { command: 'npm', args: ['run', 'start'], cwd: appRel };
    await this.steps.install(installCommandFor(pkg, this.configured('install_command')), graph.appDir, env);
    for (const dir of await dependencyDirs(sourceRoot, graph.appDir, graph.config.dependencies)) {
      const depPkg = (await readPackageJson(dir, `dependency '${path.relative(graph.appDir, dir)}'`))!;
      await this.steps.install(installCommandFor(depPkg, null), dir, env);
    }
    const buildCommand = buildCommandFor(pkg, this.configured('build_command'));
    if (buildCommand) await this.steps.run('build', buildCommand, graph.appDir, env);
    else this.buildLog.line('No build command and no "build" script: nothing to build.');
    if (kind === 'agent-server') {
      this.buildLog.line(`Checking graphs ${Object.keys(graph.config.graphs).join(', ')}`);
      const graphEnv = buildEnv(this.jail, secrets, await graphConfigEnv(graph.appDir, graph.config.env));
      await this.quota.within('checking the graphs', (signal) =>
        checkGraphs({
          appDir: graph.appDir,
          workDir: this.paths.work,
          graphs: graph.config.graphs,
          env: graphEnv,
          signal,
          onLine: (line) => this.buildLog.line(line),
          jail: this.jail,
        }),
      );
      this.buildLog.line('Every graph resolves to a graph.');
      this.buildLog.line('Installing the agent server');
      // The builder writes into the tree the steps ran in: only into the real directory.
      await assertRealDirectory(sourceRoot, this.paths.work);
      const hostDir = await copyAgentServerHost(sourceRoot);
      await this.steps.installHost(hostDir);
      // An agent server has graphs, so it was read from a graph config file.
      start = agentServerStart(graph.appDir, hostDir, graph.relativePath!, appRel);
    }

    const manifest: ArtifactManifest = {
      version: 1,
      revision_id: this.revisionId,
      commit,
      source: manifestSource,
      graph_config_path: graph.relativePath,
      graphs: graph.config.graphs,
      env: graph.config.env ?? null,
      node_version: graph.config.node_version ?? null,
      start,
      ...(kind === 'agent-server' ? { agent_server: { auth_path: authPath(graph.config) } } : {}),
      built_at: new Date().toISOString(),
    };
    // Checked before touching the artifact directory, which another attempt may own by now.
    if (!(await this.deps.dataSource.transaction((m) => this.owned(m)))) throw new OwnershipLost();
    await assertRealDirectory(sourceRoot, this.paths.work);
    await publishArtifact(this.paths, sourceRoot, manifest, this.attempt, this.jail.uid);
    await this.steps.keepUsedDependencies();
    // The image URI, not the path: where the control plane keeps its files is none of the build log's business.
    this.buildLog.line(`Artifact ready: ${artifactUri(this.revisionId)}`);
    return { commit, agentServer: kind === 'agent-server' };
  }

  /**
   * A build setting as the revision snapshotted it; revisions made before snapshots existed
   * (no key at all) fall back to the deployment's current setting.
   */
  private configured(key: 'install_command' | 'build_command'): string | null {
    const snapshot = this.rev.build_config ?? {};
    return (key in snapshot ? snapshot[key] : this.rev.source_config?.[key]) ?? null;
  }

  /**
   * Stores the resolved commit while the build runs (a retry then builds the same commit), with
   * its message and author's name (the repository's text, made storable), which the API shows.
   */
  private async recordCommit(commit: string, message: string, author: string): Promise<void> {
    const revisions = new RevisionRepository(this.deps.dataSource.manager);
    const described = {
      repo_commit_sha: commit,
      repo_commit_message: toStorableText(message) || null,
      repo_commit_author: toStorableText(author) || null,
    };
    if (!(await revisions.recordConfig(this.revisionId, ['BUILDING'], this.attempt, described)))
      throw new OwnershipLost();
  }

  /** Steps in the sandbox as the deployment's uid, or as the builder's user when there is none. */
  private async openJail(): Promise<BuildJail> {
    const { sandbox, config } = this.deps;
    if (!sandbox) return unsandboxedJail(this.paths);
    return SandboxedBuildJail.open(
      sandbox,
      this.rev.deployment_id,
      `b-${this.revisionId}-a${this.attempt}`,
      config.sandbox.build,
      this.paths,
    );
  }

  /**
   * True while the revision is still this attempt's: BUILDING with our attempt number. Takes
   * the deployment lock first (the lock order every transition follows), then the row lock.
   */
  private async owned(m: EntityManager): Promise<boolean> {
    await this.deps.flow.lockDeployment(m, this.rev.deployment_id);
    const row = await new RevisionRepository(m).lockedPhase(this.revisionId);
    return row?.status === 'BUILDING' && row.attempt === this.attempt;
  }
}
