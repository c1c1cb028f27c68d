import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registryAnswers, startRegistry, sweepRegistry } from '@slipway/registry';
import { collectRegistryGarbage } from '../../services/cli/src/registry-gc.js';
import { buildBusyboxImage, skopeoPush, type OciImage } from '../support/oci-image.js';
import { startRegistryStand, startRegistrySupervisor, type RegistryStand } from '../support/registry-stand.js';
import { entryArgs, eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';

/**
 * Garbage collection of the built-in registry (docs/operations.md, The image registry): the real
 * registry (CNCF distribution) swept with its own `garbage-collect` while it runs read-only, a
 * real deployer running the images with runc. Images are hand-built from busybox-static and
 * pushed with skopeo; nothing is pulled from anywhere else. Needs root, runc, skopeo, umoci.
 */
const PORT_MIN = 36_000 + Math.floor(Math.random() * 900);
const RUNTIME_ENV = {
  SLIPWAY_RUNTIME_PORT_MIN: String(PORT_MIN),
  SLIPWAY_RUNTIME_PORT_MAX: String(PORT_MIN + 49),
  SLIPWAY_ROLLOUT_DEADLINE_MS: '60000',
};

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

let stand: RegistryStand;
let deployer: ServiceProcess;
const images: OciImage[] = [];
const api = () => stand.api;

beforeAll(async () => {
  stand = await startRegistryStand(RUNTIME_ENV);
  stand.api.relay.start();
  deployer = await startService(
    'deployer',
    serviceEnv(stand.api, { ...RUNTIME_ENV, SLIPWAY_REGISTRY_PORT: String(stand.api.config.registry.port) }),
  );
}, 90_000);

afterAll(async () => {
  const list = (await api()?.http.get('/v2/deployments?limit=100'))?.body?.resources ?? [];
  for (const d of list) await api().http.delete(`/v2/deployments/${d.id}`);
  await eventually(
    async () => (await api().http.get('/v2/deployments?limit=100')).body.resources.length,
    (n) => n === 0,
    60_000,
    500,
  ).catch(() => undefined);
  await deployer?.stop();
  await stand?.close();
  for (const image of images) image.cleanup();
}, 120_000);

async function image(page: string): Promise<OciImage> {
  const built = await buildBusyboxImage(page);
  images.push(built);
  return built;
}

async function createDeployment(name: string) {
  const res = await api().http.post('/v2/deployments', {
    name,
    source: 'internal_docker',
    source_config: { deployment_type: 'dev' },
    source_revision_config: {},
  });
  expect(res.status, res.text).toBe(201);
  const t = await api().http.post(`/v2/deployments/${res.body.id}/push-token`);
  expect(t.status, t.text).toBe(200);
  return { id: res.body.id as string, registryUrl: t.body.registry_url as string, token: t.body.token as string };
}

async function push(d: { registryUrl: string; token: string }, img: OciImage, tag: string): Promise<string> {
  const pushed = await skopeoPush(img, `${d.registryUrl}/web:${tag}`, `oauth2accesstoken:${d.token}`);
  expect(pushed.ok, pushed.output).toBe(true);
  return pushed.digest!;
}

function settled(deploymentId: string, revisionId: string) {
  return eventually(
    async () => (await api().http.get(`/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body,
    (r) => ['DEPLOYED', 'DEPLOY_FAILED', 'INTERRUPTED'].includes(r.status),
    90_000,
    250,
  );
}

const storage = () => path.join(api().config.registry.storageDir, 'storage/docker/registry/v2');
const blobFile = (digest: string) => path.join(storage(), 'blobs/sha256', digest.slice(7, 9), digest.slice(7), 'data');
const layerOf = (img: OciImage) => {
  const manifest = JSON.parse(readFileSync(path.join(img.dir, 'blobs/sha256', img.manifestDigest.slice(7)), 'utf8'));
  return manifest.layers[0].digest as string;
};
const counted = async (repository: string) =>
  (await api().dataSource.query(`SELECT digest FROM registry_blobs WHERE repository = $1`, [repository])).map(
    (r: { digest: string }) => r.digest,
  ) as string[];

/** One gc run against the stand's registry (its sweep restarts that registry read-only and back). */
function gc(graceMs: number) {
  return collectRegistryGarbage({
    dataSource: api().dataSource,
    config: api().config,
    graceMs,
    sweep: async () => {
      const swept = await sweepRegistry(api().config, stand.registry);
      stand.registry = swept.registry!;
      return swept;
    },
  });
}

describe('registry garbage collection', () => {
  it('deletes an image no revision runs, frees its blobs and its quota bytes; the deployed image still pulls and redeploys', async () => {
    const d = await createDeployment('gc-two');
    const [used, unused, latest] = [
      await image('<h1>used</h1>'),
      await image('<h1>unused</h1>'),
      await image('<h1>latest</h1>'),
    ];
    const usedDigest = await push(d, used, 'used');
    const unusedDigest = await push(d, unused, 'unused');
    const latestDigest = await push(d, latest, 'latest');
    const deploy = async (digest: string) => {
      const patched = await api().http.patch(`/v2/deployments/${d.id}`, {
        revision_source: 'internal_docker',
        source_revision_config: { image_uri: `${d.registryUrl}/web@${digest}` },
      });
      expect(patched.status, patched.text).toBe(200);
      const id = patched.body.latest_revision_id as string;
      expect((await settled(d.id, id)).status).toBe('DEPLOYED');
      return id;
    };
    // v1 runs `used`, then v2 runs `latest`: both stay (a redeploy of v1 may come); `unused` never ran.
    const v1 = await deploy(usedDigest);
    await deploy(latestDigest);
    const repository = `${d.id}/web`;
    // Both pushes are counted (the registry's events) before the run.
    await eventually(
      () => counted(repository),
      (c) => c.includes(layerOf(used)) && c.includes(layerOf(unused)),
      20_000,
    );

    const report = await gc(0);
    expect(report.deleted).toEqual([`${repository}@${unusedDigest}`]);
    expect(report.postponed).toBeNull();
    expect(existsSync(blobFile(layerOf(unused)))).toBe(false);
    expect(existsSync(blobFile(unusedDigest))).toBe(false);
    expect(existsSync(blobFile(layerOf(used)))).toBe(true);
    expect(existsSync(blobFile(layerOf(latest)))).toBe(true);
    expect(report.freedBytes).toBeGreaterThan(500_000); // the busybox layer alone
    const left = await counted(repository);
    expect(left).toContain(layerOf(used));
    expect(left).not.toContain(layerOf(unused));
    expect(left).not.toContain(unusedDigest);
    // The tag went with it: PATCHing to it is refused now.
    const gone = await api().http.patch(`/v2/deployments/${d.id}`, {
      revision_source: 'internal_docker',
      source_revision_config: { image_uri: `${d.registryUrl}/web:unused` },
    });
    expect(gone.status, gone.text).toBe(422);

    // A machine without the unpacked image (v1's container is gone by now): the redeploy pulls it again.
    await eventually(
      async () =>
        (
          await api().dataSource.query(
            `SELECT 1 FROM runtime_processes WHERE revision_id = $1 AND status <> 'exited'`,
            [v1],
          )
        ).length,
      (n) => n === 0,
      60_000,
      500,
    );
    const unpacked = path.join(api().config.dataDir, 'images', usedDigest.slice(7));
    await eventually(
      async () => existsSync(unpacked),
      (here) => here,
      10_000,
    );
    rmSync(unpacked, { recursive: true, force: true });
    const redeploy = await api().http.post(`/v2/deployments/${d.id}/revisions/${v1}/redeploy`);
    expect(redeploy.status, redeploy.text).toBe(200);
    const again = redeploy.body.latest_revision_id as string;
    const rev = await settled(d.id, again);
    expect(rev.status, rev.status_message).toBe('DEPLOYED');
    // The deployer's log lines are written in batches beside the status change: they may land
    // just after DEPLOYED does.
    const deployLog = async () =>
      (
        await api().dataSource.query(
          `SELECT message FROM revision_logs WHERE revision_id = $1 AND type = 'deploy' ORDER BY id`,
          [again],
        )
      )
        .map((r: { message: string }) => r.message)
        .join('\n');
    expect(await eventually(deployLog, (log) => log.includes('Pulled and unpacked image'), 10_000)).toContain(
      'Pulled and unpacked image',
    );
    const [row] = await api().dataSource.query(`SELECT serving_port FROM deployments WHERE id = $1`, [d.id]);
    expect(
      await (await fetch(`http://127.0.0.1:${row.serving_port}/`, { headers: { 'x-api-key': api().adminKey } })).text(),
    ).toBe('<h1>used</h1>');
  }, 240_000);

  it("keeps a push within the grace period; a deleted deployment's images go", async () => {
    const keep = await createDeployment('gc-recent');
    const fresh = await push(keep, await image('<h1>fresh</h1>'), 'fresh');
    const doomed = await createDeployment('gc-deleted');
    const orphan = await push(doomed, await image('<h1>orphan</h1>'), 'orphan');
    expect((await api().http.delete(`/v2/deployments/${doomed.id}`)).status).toBeLessThan(300);
    // The deployer tears it down after provisioning it (one CI run under load took over 60 s):
    // on a timeout, say where the deployment stood and what the deployer last said.
    await eventually(
      async () => (await api().http.get(`/v2/deployments/${doomed.id}`)).status,
      (s) => s === 404,
      120_000,
      500,
    ).catch(async (err: Error) => {
      const row = await api().dataSource.query(`SELECT status, database_name FROM deployments WHERE id = $1`, [
        doomed.id,
      ]);
      throw new Error(
        `${err.message}\ndeployment: ${JSON.stringify(row[0])}\nthe deployer's last ` +
          `lines:\n${deployer.output().split('\n').slice(-30).join('\n')}`,
      );
    });

    const report = await gc(60 * 60_000);
    expect(report.deleted).toContain(`${doomed.id}/web@${orphan}`);
    expect(report.deleted).not.toContain(`${keep.id}/web@${fresh}`);
    expect(existsSync(blobFile(orphan))).toBe(false);
    expect(existsSync(blobFile(fresh))).toBe(true);
    const patched = await api().http.patch(`/v2/deployments/${keep.id}`, {
      revision_source: 'internal_docker',
      source_revision_config: { image_uri: `${keep.registryUrl}/web:fresh` },
    });
    expect(patched.status, patched.text).toBe(200);
  }, 240_000);

  it('`pnpm slipway registry gc` has the registry supervisor sweep, read-only meanwhile; it serves again after', async () => {
    const d = await createDeployment('gc-cli');
    const digest = await push(d, await image('<h1>cli</h1>'), 'cli');
    // `npm start`'s supervisor in place of the stand's registry.
    await stand.registry.stop();
    const supervisor = startRegistrySupervisor(api());
    const { env } = supervisor;
    try {
      await eventually(
        () => registryAnswers(api().config.registry.internalUrl),
        (up) => up,
        30_000,
        250,
      );
      const out = await new Promise<string>((resolve, reject) =>
        execFile(
          process.execPath,
          [...entryArgs('cli'), 'registry', 'gc', '--grace-hours', '0'],
          { cwd: ROOT, env, timeout: 120_000 },
          (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stdout}${stderr}`)) : resolve(stdout)),
        ),
      );
      expect(out).toContain(`deleted ${d.id}/web@${digest}`);
      expect(out).toMatch(/swept: [1-9]\d* bytes freed/);
      expect(existsSync(blobFile(digest))).toBe(false);
      expect(supervisor.said()).toContain('the registry is read-only meanwhile');
      expect(supervisor.said()).toContain('registry garbage swept');
      // Serving (read-write) again: a push works.
      expect(await registryAnswers(api().config.registry.internalUrl)).toBe(true);
      await push(d, await image('<h1>after</h1>'), 'after');
    } finally {
      await supervisor.stop();
      stand.registry = await startRegistry(api().config);
    }
  }, 180_000);

  it('the registry restarted read-only for a sweep serves pulls and refuses pushes', async () => {
    const d = await createDeployment('gc-readonly');
    const digest = await push(d, await image('<h1>ro</h1>'), 'ro');
    const refusedImage = await image('<h1>refused</h1>');
    await stand.registry.stop();
    stand.registry = await startRegistry(api().config, { readOnly: true });
    const scratch = mkdtempSync(path.join(tmpdir(), 'slipway-pull-'));
    try {
      const refused = await skopeoPush(refusedImage, `${d.registryUrl}/web:refused`, `oauth2accesstoken:${d.token}`);
      expect(refused.ok).toBe(false);
      expect(refused.output).toMatch(/read-only|UNSUPPORTED|405/i);
      await new Promise<string>((resolve, reject) =>
        execFile(
          'skopeo',
          [
            'copy',
            '--src-tls-verify=false',
            '--src-creds',
            `oauth2accesstoken:${d.token}`,
            `docker://${d.registryUrl}/web@${digest}`,
            `oci:${scratch}:ro`,
          ],
          { timeout: 60_000 },
          (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
        ),
      );
      // The pulled layout names exactly the pushed manifest, and holds it.
      const index = JSON.parse(readFileSync(path.join(scratch, 'index.json'), 'utf8'));
      expect(index.manifests.map((m: { digest: string }) => m.digest)).toEqual([digest]);
      expect(existsSync(path.join(scratch, 'blobs/sha256', digest.slice(7)))).toBe(true);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
      await stand.registry.stop();
      stand.registry = await startRegistry(api().config);
    }
  }, 120_000);
});
