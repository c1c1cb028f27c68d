import type { Logger } from '@slipway/logging';
import { BuildError, type BuildLog } from './build-steps.js';
import type { BuildQuota } from './build-quota.js';
import { assertRealDirectory, type BuildJail } from './build-sandbox.js';
import { DependencyCache } from './dependency-cache.js';
import type { AgentServerHostInstall, HostInstallResult } from './host-install.js';
import { runShellCommand } from './run-command.js';

/** What a build's steps run with: its jail, disk quota, log and dependency caches. */
export interface BuildStepContext {
  jail: BuildJail;
  quota: BuildQuota;
  buildLog: BuildLog;
  /** The deployment's installed dependencies of earlier builds. */
  dependencies: DependencyCache;
  /** The agent server's dependencies, the builder's one install. */
  hostInstall: AgentServerHostInstall;
  /** The build's directory: nothing is copied from outside it. */
  workDir: string;
  log: Logger;
}

/**
 * The install and build steps of one build attempt: each command run in the build's jail under
 * its disk quota, installs reused from the deployment's dependency cache where nothing that
 * decides them changed, and the agent server's dependencies copied from the builder's install.
 */
export class BuildStepRunner {
  /** The dependency cache entries this build used or made: the ones kept once it succeeded. */
  private readonly dependencyKeys = new Set<string>();
  /** Set once the agent server's dependencies are in the tree: the build's last step. */
  private hostInPlace = false;

  constructor(private readonly ctx: BuildStepContext) {}

  /**
   * An install step, or the reuse of what the deployment's last build installed for the very
   * same lockfile, package.json and command (DependencyCache); a fresh install is kept for the
   * next build right after its step, before any later step ran.
   */
  async install(command: string, dir: string, env: Record<string, string>): Promise<void> {
    const found = await DependencyCache.keyOf(dir, command);
    if (found.key === null) {
      await this.run('install', command, dir, env);
      this.ctx.buildLog.line(`Dependencies not kept for the next build: ${found.reason}.`);
      return;
    }
    this.dependencyKeys.add(found.key);
    await assertRealDirectory(dir, this.ctx.workDir);
    if (await this.ctx.dependencies.restore(found.key, dir)) {
      this.ctx.buildLog.line(
        `Reusing the dependencies installed for this ${found.lockfile} (${found.key.slice(0, 12)}): \`${command}\` skipped.`,
      );
      // What the builder copied in becomes the deployment's, like the rest of the tree.
      await this.prepareJail();
      return;
    }
    await this.run('install', command, dir, env);
    await assertRealDirectory(dir, this.ctx.workDir);
    await this.ctx.dependencies
      .save(found.key, dir)
      .catch((err) => this.ctx.log.warn({ err }, 'could not keep the installed dependencies'));
  }

  /**
   * The agent server's dependencies into its copy at `hostDir`: the builder's one install of
   * them (AgentServerHostInstall), made now if this is the first agent build to need it.
   * Counted against the build's disk quota like the rest of the artifact.
   */
  async installHost(hostDir: string): Promise<void> {
    // What the builder copied in (the host's package files, compiled) becomes the deployment's,
    // like the rest of the tree; the dependencies that follow stay the builder's when linked.
    await this.prepareJail();
    this.hostInPlace = true;
    let result: HostInstallResult | undefined;
    await this.ctx.quota.within("installing the agent server's dependencies", async (signal) => {
      result = await this.ctx.hostInstall.copyInto(hostDir, {
        signal,
        onLine: (line) => this.ctx.buildLog.line(line),
        // Sandboxed, the deployment's uid cannot write the builder's files: links are safe.
        linked: this.ctx.jail.uid !== null,
      });
    });
    const { key, installed } = result!;
    this.ctx.buildLog.line(
      installed
        ? `Agent server dependencies installed (${key.slice(0, 12)}); later agent builds reuse them.`
        : `Reusing the agent server's installed dependencies (${key.slice(0, 12)}).`,
    );
  }

  /**
   * Runs one install or build command in the build's jail, watching the disk quota while it
   * runs and checking it once more after.
   */
  async run(step: 'install' | 'build', command: string, cwd: string, env: Record<string, string>): Promise<void> {
    this.ctx.buildLog.line(`$ ${command}`);
    this.ctx.log.info(
      { step, command: this.ctx.buildLog.redact(command), uid: this.ctx.jail.uid },
      `running the ${step} command`,
    );
    await this.prepareJail();
    await this.ctx.quota.within(`the ${step} command \`${command}\``, async (signal) => {
      const result = await runShellCommand({
        command,
        cwd,
        env,
        launch: this.ctx.jail.launch(command, cwd),
        signal,
        onLine: (line) => {
          if (line.length) this.ctx.buildLog.line(line);
        },
        backlog: () => this.ctx.buildLog.backlog(),
      });
      if (result.exitCode !== 0) {
        const cause = await this.ctx.jail.killedBecause();
        const how = cause
          ? `was killed: ${cause}`
          : result.exitCode !== null
            ? `exited with code ${result.exitCode}`
            : `was killed by ${result.signal}`;
        throw new BuildError(`The ${step} command \`${command}\` ${how}.`);
      }
    });
  }

  /**
   * Hands what the builder wrote to the deployment's uid (BuildJail.prepare). Never once the
   * agent server's dependencies are in place: re-owning the tree would re-own the files linked
   * from the builder's install, which every other deployment's artifact shares.
   */
  private async prepareJail(): Promise<void> {
    if (this.hostInPlace) throw new Error("No build step may follow the agent server's dependencies.");
    await this.ctx.jail.prepare();
  }

  /** After a successful build: the deployment's cache keeps only the entries this build used. */
  async keepUsedDependencies(): Promise<void> {
    await this.ctx.dependencies
      .keepOnly(this.dependencyKeys)
      .catch((err) => this.ctx.log.warn({ err }, 'could not trim the dependency cache'));
  }
}
