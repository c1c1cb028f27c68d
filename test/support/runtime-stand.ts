import path from 'node:path';
import { expect } from 'vitest';
import { Runc } from '@slipway/runtime';
import { buildBusyboxImage, skopeoPush, type BusyboxImageOptions, type OciImage } from './oci-image.js';
import { startRegistryStand, type RegistryStand } from './registry-stand.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from './service-process.js';
import type { TestApi } from './test-api.js';

/**
 * The embedded container runtime's test stand: a test api with its own real registry, a deployer
 * process with the sandbox, and helpers that push hand-built images (busybox-static httpd) and
 * follow their revisions.
 */
export class RuntimeStand {
  stand!: RegistryStand;
  deployer!: ServiceProcess;
  readonly images: OciImage[] = [];

  constructor(private readonly env: Record<string, string>) {}

  api = (): TestApi => this.stand.api;
  deployerEnv = () =>
    serviceEnv(this.stand.api, { ...this.env, SLIPWAY_REGISTRY_PORT: String(this.stand.api.config.registry.port) });
  runcRoot = () => path.join(this.api().config.dataDir, 'runtime', 'runc');
  imagesDir = () => path.join(this.api().config.dataDir, 'images');

  async start(): Promise<void> {
    this.stand = await startRegistryStand(this.env);
    this.stand.api.relay.start();
    this.deployer = await startService('deployer', this.deployerEnv());
  }

  /** Deleting the deployments stops their containers (teardown); then the services go. */
  async close(): Promise<void> {
    const list = (await this.stand?.api.http.get('/v2/deployments?limit=100'))?.body?.resources ?? [];
    for (const d of list) await this.api().http.delete(`/v2/deployments/${d.id}`);
    if (list.length) {
      await eventually(
        async () => new Runc(this.runcRoot()).list(),
        (l) => l.length === 0,
        60_000,
        500,
      ).catch(() => undefined);
    }
    await this.deployer?.stop();
    await this.stand?.close();
    for (const image of this.images) image.cleanup();
  }

  /** The helpers, bound to this stand. */
  helpers() {
    const api = this.api;
    const images = this.images;
    const runcRoot = this.runcRoot;
    async function image(page: string, options: BusyboxImageOptions = {}): Promise<OciImage> {
      const built = await buildBusyboxImage(page, options);
      images.push(built);
      return built;
    }

    async function createDeployment(name: string): Promise<{ id: string; registryUrl: string; token: string }> {
      const res = await api().http.post('/v2/deployments', {
        name,
        source: 'internal_docker',
        source_config: { deployment_type: 'dev' },
        source_revision_config: {},
      });
      expect(res.status, res.text).toBe(201);
      const t = await api().http.post(`/v2/deployments/${res.body.id}/push-token`);
      expect(t.status, t.text).toBe(200);
      return { id: res.body.id, registryUrl: t.body.registry_url, token: t.body.token };
    }

    /** Pushes `img` as `web:<tag>` and PATCHes the deployment to it; the new revision's id. */
    async function deploy(
      d: { id: string; registryUrl: string; token: string },
      img: OciImage,
      tag: string,
      extra: Record<string, unknown> = {},
    ): Promise<string> {
      const pushed = await skopeoPush(img, `${d.registryUrl}/web:${tag}`, `oauth2accesstoken:${d.token}`);
      expect(pushed.ok, pushed.output).toBe(true);
      const res = await api().http.patch(`/v2/deployments/${d.id}`, {
        revision_source: 'internal_docker',
        source_revision_config: { image_uri: `${d.registryUrl}/web:${tag}` },
        ...extra,
      });
      expect(res.status, res.text).toBe(200);
      return res.body.latest_revision_id;
    }

    async function revision(deploymentId: string, revisionId: string) {
      return (await api().http.get(`/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body;
    }

    function settled(deploymentId: string, revisionId: string, timeoutMs = 90_000) {
      return eventually(
        () => revision(deploymentId, revisionId),
        (r) => ['DEPLOYED', 'DEPLOY_FAILED', 'INTERRUPTED'].includes(r.status),
        timeoutMs,
        250,
      );
    }

    async function servingUrl(deploymentId: string): Promise<string> {
      const [row] = await api().dataSource.query(`SELECT serving_port FROM deployments WHERE id = $1`, [deploymentId]);
      return `http://127.0.0.1:${row.serving_port}`;
    }

    /**
     * GET with the admin key in X-Api-Key unless `headers` say otherwise: an internal_docker
     * deployment is an agent server, whose serving URL requires a key; one that needs none has it removed.
     */
    async function get(
      url: string,
      headers: Record<string, string> = { 'x-api-key': api().adminKey },
    ): Promise<{ status: number; text: string } | null> {
      try {
        const res = await fetch(url, { headers, signal: AbortSignal.timeout(5_000) });
        return { status: res.status, text: await res.text() };
      } catch {
        return null;
      }
    }

    async function liveInstances(
      deploymentId: string,
    ): Promise<{ id: string; pid: number; revision_id: string; status: string; address: string; port: number }[]> {
      return api().dataSource.query(
        `SELECT id, pid, revision_id, status, address, port FROM runtime_processes WHERE deployment_id = $1 AND status <> 'exited'`,
        [deploymentId],
      );
    }

    async function deployLog(revisionId: string): Promise<string> {
      const rows = await api().dataSource.query(
        `SELECT message FROM revision_logs WHERE revision_id = $1 AND type = 'deploy' ORDER BY id`,
        [revisionId],
      );
      return rows.map((r: { message: string }) => r.message).join('\n');
    }

    /** Kills the deployment's container; it is restarted (a new pid) and serves `page` at `url` again. */
    async function crashAndRecover(deploymentId: string, url: string, page: string): Promise<void> {
      const [before] = await liveInstances(deploymentId);
      await new Runc(runcRoot()).signal(`i-${before!.id}`, 'KILL', true);
      await eventually(
        async () => (await liveInstances(deploymentId))[0],
        (i) => !!i && i.status === 'running' && i.pid !== before!.pid && new Runc(runcRoot()).isRunning(`i-${i.id}`),
        60_000,
        500,
      );
      await eventually(
        () => get(url),
        (r) => r?.text === page,
        30_000,
      );
    }

    /** A deployment serving `page` from a first image: the starting point of several cases. */
    async function serving(name: string, page: string, extra: Record<string, unknown> = {}) {
      const d = await createDeployment(name);
      const v1 = await deploy(d, await image(page), 'v1', extra);
      const rev = await settled(d.id, v1);
      expect(rev.status, rev.status_message).toBe('DEPLOYED');
      const url = await servingUrl(d.id);
      await eventually(
        () => get(url),
        (r) => r?.text === page,
        10_000,
      );
      return { d, v1, url };
    }

    return {
      image,
      createDeployment,
      deploy,
      revision,
      settled,
      servingUrl,
      get,
      liveInstances,
      deployLog,
      crashAndRecover,
      serving,
    };
  }
}
