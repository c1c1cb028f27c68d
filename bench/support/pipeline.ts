import { execFileSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { RevisionFixtures } from '@slipway/pipeline';
import { CgroupWriter, detectCgroups, removeSandboxPool } from '@slipway/runtime';
import { killGroup, processesUnder } from '../../test/support/app-processes.js';
import { freePort, startProcess, type BenchProcess } from './processes.js';
import type { BenchStack } from './stack.js';

const FINAL = ['DEPLOYED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'CREATE_FAILED', 'INTERRUPTED'];
/** Sandbox addresses of bench runs: a /22 of 10.224.0.0/11, apart from the tests' 10.192.0.0/11. */
const subnet = () => `10.${224 + randomInt(0, 32)}.${randomInt(0, 64) * 4}.0/22`;

/**
 * A builder and a deployer beside the bench stack's api, compiled and configured as in
 * production (the sandbox on when the bench runs as root, as CI does), building from local git
 * repositories under the stack's `repos` directory through a `local` repohost integration.
 */
export class BenchPipeline {
  readonly subnet = subnet();
  private readonly uidMin = 3_000_000 + randomInt(0, 1_000_000) * 1000;
  private builder!: BenchProcess;
  private deployer!: BenchProcess;
  private integrationId!: string;

  constructor(private readonly stack: BenchStack) {}

  get reposRoot(): string {
    return this.stack.reposRoot;
  }

  /** `deployerArgs` go before the deployer's entry file (`--cpu-prof` for `pnpm bench --profile`). */
  async start(deployerArgs: string[] = []): Promise<void> {
    const portMin = 40_000 + randomInt(0, 200) * 100;
    const env = {
      ...this.stack.serviceEnv,
      SLIPWAY_SANDBOX_SUBNET: this.subnet,
      SLIPWAY_SANDBOX_UID_MIN: String(this.uidMin),
      SLIPWAY_SANDBOX_UID_MAX: String(this.uidMin + 999),
      SLIPWAY_RUNTIME_PORT_MIN: String(portMin),
      SLIPWAY_RUNTIME_PORT_MAX: String(portMin + 99),
      // The serving path is measured at hundreds of requests a second with one key: budgets off, as for the api.
      SLIPWAY_RATE_LIMIT_PER_KEY: '0',
      SLIPWAY_RATE_LIMIT_PER_ADDRESS: '0',
      ...(process.getuid?.() === 0 ? {} : { SLIPWAY_SANDBOX: 'off' }),
      // A directory the test suite's builders share (the smoke run); unset, the bench's own data dir.
      ...(process.env.SLIPWAY_AGENT_SERVER_HOST_CACHE
        ? { SLIPWAY_AGENT_SERVER_HOST_CACHE: process.env.SLIPWAY_AGENT_SERVER_HOST_CACHE }
        : {}),
    };
    const worker = async (name: 'builder' | 'deployer', args: string[]) => {
      const port = await freePort();
      return startProcess(
        [...args, this.stack.entryOf(name)],
        { ...env, SLIPWAY_WORKER_HEALTH_PORT: String(port) },
        port,
      );
    };
    [this.builder, this.deployer] = await Promise.all([worker('builder', []), worker('deployer', deployerArgs)]);
    const integration = await this.stack.request('POST', '/v1/integrations/repohost', {
      provider: 'local',
      // One per pipeline: the create scenario starts a second one after the deploy scenario's.
      name: `bench-${randomInt(0, 1_000_000)}`,
      config: { root: this.reposRoot },
    });
    this.integrationId = integration.id;
  }

  /** Writes `files` (and copies `copy`, a directory, first) into repository `name`, commits, returns the sha. */
  commit(name: string, files: Record<string, string>, copy?: string): string {
    const repo = path.join(this.reposRoot, name);
    mkdirSync(repo, { recursive: true });
    execFileSync('git', ['init', '-q', '-b', 'main', repo]);
    if (copy) cpSync(copy, repo, { recursive: true });
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(repo, file)), { recursive: true });
      writeFileSync(path.join(repo, file), text);
    }
    const git = (...args: string[]) =>
      execFileSync('git', ['-C', repo, '-c', 'user.name=b', '-c', 'user.email=b@example.com', ...args], {
        encoding: 'utf8',
      }).trim();
    git('add', '-A');
    git('commit', '-q', '--allow-empty', '-m', 'bench');
    return git('rev-parse', 'HEAD');
  }

  /** Creates a repohost deployment of repository `name`; returns its id and first revision. */
  async deploy(name: string): Promise<{ deploymentId: string; revisionId: string }> {
    const d = await this.stack.request('POST', '/v2/deployments', {
      name,
      source: 'repohost',
      source_config: {
        integration_id: this.integrationId,
        repo_url: `file://${path.join(this.reposRoot, name)}`,
        build_on_push: false,
      },
      source_revision_config: {},
    });
    return { deploymentId: d.id, revisionId: d.latest_revision_id };
  }

  /** A new revision from the branch head (a redeploy after a commit); returns its id. */
  async redeploy(deploymentId: string): Promise<string> {
    const d = await this.stack.request('PATCH', `/v2/deployments/${deploymentId}`, {
      source_revision_config: { repo_ref: 'main' },
    });
    return d.latest_revision_id;
  }

  /** Polls the revision every 100 ms until final; throws unless DEPLOYED. */
  async deployed(deploymentId: string, revisionId: string, timeoutMs = 600_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = await this.stack.request('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}`);
      if (r.status === 'DEPLOYED') return;
      if (FINAL.includes(r.status))
        throw new Error(
          `revision ${revisionId} ended ${r.status}: ${r.status_message}\n${this.builder.output().slice(-2000)}`,
        );
      if (Date.now() > deadline) throw new Error(`revision ${revisionId} still ${r.status} after ${timeoutMs} ms`);
      await new Promise((res) => setTimeout(res, 100));
    }
  }

  /**
   * The deployment's serving port on the runtime host (the bench's default, 127.0.0.1): its
   * deployer's serving proxy, which the edge forwards to.
   */
  async servingUrl(deploymentId: string): Promise<string> {
    const [row] = await this.stack.dataSource.query(`SELECT serving_port FROM deployments WHERE id = $1`, [
      deploymentId,
    ]);
    if (!row?.serving_port) throw new Error(`deployment ${deploymentId} has no serving port`);
    return `http://127.0.0.1:${row.serving_port}`;
  }

  /** Where the deployment's one running instance answers itself (its sandbox address). */
  async instanceUrl(deploymentId: string): Promise<string> {
    const [row] = await this.stack.dataSource.query(
      `SELECT port, address FROM runtime_processes WHERE deployment_id = $1 AND status = 'running' ORDER BY started_at DESC LIMIT 1`,
      [deploymentId],
    );
    if (!row) throw new Error(`deployment ${deploymentId} has no running instance`);
    return `http://${row.address ?? '127.0.0.1'}:${row.port}`;
  }

  /**
   * Deletes every deployment (teardown drops their databases and Redis users), then stops the
   * services and removes what their sandboxes left. The deployer writes its CPU profile as it exits.
   */
  async close(): Promise<void> {
    const ids: Array<{ id: string }> = await this.stack.dataSource
      .query(`SELECT id FROM deployments WHERE source = 'repohost'`)
      .catch(() => []);
    await Promise.allSettled(ids.map(({ id }) => this.stack.request('DELETE', `/v2/deployments/${id}`)));
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
      const [left] = await this.stack.dataSource.query(
        `SELECT count(*)::int AS n FROM deployments WHERE id = ANY($1)`,
        [ids.map((r) => r.id)],
      );
      if (!left.n) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    await Promise.allSettled([this.builder?.stop(), this.deployer?.stop()]);
    for (const p of processesUnder(this.stack.dataDir)) killGroup(p.pgrp);
    const layout = process.getuid?.() === 0 ? await detectCgroups() : null;
    if (layout) {
      const cgroups = new CgroupWriter(layout);
      const instances: Array<{ id: string }> = await this.stack.dataSource
        .query(`SELECT id FROM runtime_processes`)
        .catch(() => []);
      for (const { id } of instances)
        await cgroups
          .handle(`i-${id}`)
          .remove()
          .catch(() => {});
      const builds = await new RevisionFixtures(this.stack.dataSource.manager).attempts().catch(() => []);
      for (const r of builds)
        for (let a = 0; a <= r.attempt; a++)
          await cgroups
            .handle(`b-${r.id}-a${a}`)
            .remove()
            .catch(() => {});
      await removeSandboxPool(this.subnet).catch(() => {});
    }
  }
}
