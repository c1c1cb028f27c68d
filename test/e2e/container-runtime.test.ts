import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRegistry } from '@slipway/registry';
import { Runc } from '@slipway/runtime';
import { skopeoPush, type BusyboxImageOptions } from '../support/oci-image.js';
import { RuntimeStand } from '../support/runtime-stand.js';
import { eventually, startService } from '../support/service-process.js';

/**
 * The embedded container runtime (issue 20): `internal_docker` revisions run as runc containers
 * in the deployment's sandbox. Real api, deployer process, registry (CNCF distribution) and
 * runc; the images are hand-built OCI layouts (busybox-static httpd serving /ok on $PORT, with a
 * CGI that reports who it runs as and what it sees) pushed with skopeo. Nothing is pulled from
 * anywhere else. Needs root (the sandbox), runc, skopeo, umoci and catatonit.
 */
const PORT_MIN = 33_000 + Math.floor(Math.random() * 900);
const RUNTIME_ENV = {
  SLIPWAY_RUNTIME_PORT_MIN: String(PORT_MIN),
  SLIPWAY_RUNTIME_PORT_MAX: String(PORT_MIN + 99),
  SLIPWAY_ROLLOUT_DEADLINE_MS: '60000',
};

const runtime = new RuntimeStand(RUNTIME_ENV);
const {
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
} = runtime.helpers();
const { api, deployerEnv, runcRoot, imagesDir } = runtime;

beforeAll(() => runtime.start(), 90_000);
afterAll(() => runtime.close(), 120_000);

/** How often the revision's rollout was started (the reconciler retries a phase that threw). */
async function attempts(revisionId: string): Promise<number> {
  const [row] = await api().dataSource.query(`SELECT attempt FROM revisions WHERE id = $1`, [revisionId]);
  return row.attempt;
}

describe('the embedded container runtime', () => {
  it('PATCH with a pushed image reaches DEPLOYED and the deployment URL serves the image, run by runc', async () => {
    const { d, v1, url } = await serving('ctr-first', '<h1>first</h1>');
    expect((await get(`${url}/ok`))?.status).toBe(200);
    const [instance] = await liveInstances(d.id);
    expect(instance).toMatchObject({ revision_id: v1, status: 'running' });
    // A runc container of our own root, running; the image unpacked once under the data dir.
    const listed = await new Runc(runcRoot()).list();
    expect(listed).toContainEqual({ id: `i-${instance!.id}`, status: 'running' });
    const digest = (await revision(d.id, v1)).image_digest as string;
    expect(existsSync(path.join(imagesDir(), digest.slice(7), 'bundle', 'rootfs', 'www', 'ok'))).toBe(true);
    expect(await deployLog(v1)).toContain(`Pulled and unpacked image`);
    // An image without USER: nothing to say about it.
    expect(await deployLog(v1)).not.toContain("The image's USER");
    // The container's output file is shipped into the deploy log like a process's.
    await eventually(
      () => deployLog(v1),
      (log) => log.includes(`starting instance 0 of revision ${v1} (image ${digest})`),
      10_000,
    );
  }, 120_000);

  it('the container runs as the deployment uid with no capabilities, a read-only root and no host socket', async () => {
    const { d, url } = await serving('ctr-whoami', '<h1>who</h1>', {
      secrets: [{ name: 'MY_TOKEN', value: 'sekrit-123' }],
    });
    const res = await get(`${url}/cgi-bin/whoami`);
    expect(res?.status, res?.text).toBe(200);
    const [{ uid }] = await api().dataSource.query(`SELECT sandbox_uid AS uid FROM deployments WHERE id = $1`, [d.id]);
    const text = res!.text;
    expect(text).toContain(`uid=${uid} gid=${uid} groups=${uid}`);
    expect(text).toMatch(/CapEff:\s+0000000000000000/);
    expect(text).toMatch(/CapBnd:\s+0000000000000000/);
    expect(text).toMatch(/NoNewPrivs:\s+1/);
    expect(text).toContain('rootfs-writable: no');
    expect(text).toContain('tmp-writable: yes');
    // No socket of the host anywhere in its filesystem, nothing of the host's /run, and the
    // host's loopback services are not its loopback.
    expect(text).toMatch(/^sockets: *$/m);
    // The image has neither /run nor /var/run, and nothing of the host's is mounted there.
    expect(text).toMatch(/^run: ls: \/run: No such file or directory ls: \/var\/run: No such file or directory *$/m);
    expect(text).toContain('host-postgres: closed');
    // Its environment (PID 1's: CGI scripts get httpd's own): the platform's variables, nothing of the control plane's.
    expect(text).toMatch(/env: .*\bDATABASE_URI\b/);
    expect(text).toMatch(/env: .*\bPORT\b/);
    // The official Python agent server's key prefix, under the deployment's Redis prefix.
    const [instance] = await liveInstances(d.id);
    const environ = readFileSync(`/proc/${instance!.pid}/environ`, 'utf8').split('\0');
    const prefix = environ.find((e) => e.startsWith('REDIS_PREFIX='))!.slice('REDIS_PREFIX='.length);
    expect(prefix).toBe(`slipway-d-${d.id}`);
    expect(environ).toContain(`REDIS_KEY_PREFIX=${prefix}:`);
    // The revision's secrets, and the image's own Env beneath them.
    expect(environ).toContain('MY_TOKEN=sekrit-123');
    expect(environ).toContain('PATH=/bin');
    expect(text).not.toMatch(/\bDATABASE_URL\b|\bREDIS_URL\b|SLIPWAY_/);
    // Tracing with no configuration: the container reaches its deployment's trace front, and a
    // run it sends there lands in the deployment's tracing project.
    expect(environ).toContain('LANGSMITH_TRACING=true');
    expect(environ).toContain('LANGSMITH_PROJECT=ctr-whoami');
    expect(environ).toContain(`LANGCHAIN_REVISION_ID=${instance!.revision_id}`);
    expect(text).toMatch(/trace-info: .*"use_multipart_endpoint":true/);
    const run = /trace-run: ([0-9a-f-]{36})/.exec(text)?.[1];
    expect(run, text).toBeDefined();
    const stored = await api().http.get(`/api/v1/runs/${run}`);
    expect(stored.status, stored.text).toBe(200);
    expect(stored.body).toMatchObject({
      name: 'from-container',
      session_id: (await api().http.get(`/v2/deployments/${d.id}`)).body.tracer_session_id,
    });
  }, 120_000);

  it("an image's USER, root or a non-root uid, is ignored: it runs as the deployment uid, and the deploy log says so", async () => {
    const d = await createDeployment('ctr-user');
    for (const [tag, user] of [
      ['root', '0'],
      ['numeric', '1234:1234'],
    ] as const) {
      const id = await deploy(d, await image(`<h1>${tag}</h1>`, { user }), tag);
      const rev = await settled(d.id, id);
      expect(rev.status, `${tag}: ${rev.status_message}`).toBe('DEPLOYED');
      // Given to the deployment at its first start.
      const [{ uid }] = await api().dataSource.query(`SELECT sandbox_uid AS uid FROM deployments WHERE id = $1`, [
        d.id,
      ]);
      expect(uid).toBeGreaterThan(0);
      const url = await servingUrl(d.id);
      await eventually(
        () => get(url),
        (r) => r?.text === `<h1>${tag}</h1>`,
        10_000,
      );
      const res = await get(`${url}/cgi-bin/whoami`);
      expect(res?.status, res?.text).toBe(200);
      expect(res!.text, tag).toContain(`uid=${uid} gid=${uid} groups=${uid}\n`);
      // The container's init (as the kernel sees it), not only what the CGI reports.
      const [instance] = (await liveInstances(d.id)).filter((i) => i.revision_id === id);
      const status = readFileSync(`/proc/${instance!.pid}/status`, 'utf8');
      expect(status, tag).toMatch(new RegExp(`^Uid:\\s+${uid}\\s+${uid}\\s+${uid}\\s+${uid}$`, 'm'));
      const log = await deployLog(id);
      expect(log, tag).toContain(
        `The image's USER ${user} is ignored: its containers run as the deployment's uid ${uid}.`,
      );
      expect(log.split("The image's USER").length - 1, `${tag}: said once`).toBe(1);
    }
  }, 180_000);

  it("the container's stdout and stderr reach the revision's deploy log through the API, marked with the instance", async () => {
    const d = await createDeployment('ctr-output');
    const marker = `m${Date.now().toString(36)}`;
    const script = `echo "out-${marker} from stdout"; echo "err-${marker} from stderr" >&2; exec /bin/busybox httpd -f -p "$PORT" -h /www`;
    const id = await deploy(d, await image('<h1>chatty</h1>', { cmd: ['/bin/busybox', 'sh', '-c', script] }), 'chatty');
    const rev = await settled(d.id, id);
    expect(rev.status, rev.status_message).toBe('DEPLOYED');
    // The API's deploy log, not the table behind it; lines the container printed carry its index.
    const lines = async () =>
      (await api().http.get(`/v2/deployments/${d.id}/revisions/${id}/logs?type=deploy&query=${marker}&limit=100`)).body
        .logs as { message: string; instance?: number }[];
    const found = await eventually(lines, (l) => l.length >= 2, 15_000, 250);
    expect(found).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ message: `out-${marker} from stdout`, instance: 0 }),
        expect.objectContaining({ message: `err-${marker} from stderr`, instance: 0 }),
      ]),
    );
  }, 120_000);

  it('v1 → v2 under probing every 100 ms: zero failed requests, then only v2', async () => {
    const { d, url } = await serving('ctr-switch', '<h1>v1</h1>');
    const failures: string[] = [];
    const seen = new Set<string>();
    let probing = true;
    const prober = (async () => {
      while (probing) {
        const r = await get(url);
        if (!r || r.status !== 200) failures.push(r ? `${r.status} ${r.text.slice(0, 100)}` : 'connection failed');
        else seen.add(r.text);
        await new Promise((res) => setTimeout(res, 100));
      }
    })();
    const v2 = await deploy(d, await image('<h1>v2</h1>'), 'v2');
    const rev = await settled(d.id, v2);
    await eventually(
      () => get(url),
      (r) => r?.text === '<h1>v2</h1>',
      10_000,
    );
    await new Promise((r) => setTimeout(r, 3_000));
    probing = false;
    await prober;
    expect(rev.status, rev.status_message).toBe('DEPLOYED');
    expect(failures).toEqual([]);
    expect(seen).toEqual(new Set(['<h1>v1</h1>', '<h1>v2</h1>']));
    // The old container is stopped and deleted.
    await eventually(
      async () => (await liveInstances(d.id)).map((i) => i.revision_id),
      (ids) => ids.length === 1 && ids[0] === v2,
      30_000,
      500,
    );
  }, 180_000);

  it('an image without entrypoint or cmd fails with the cause; v1 keeps serving', async () => {
    const { d, v1, url } = await serving('ctr-nocmd', '<h1>stays</h1>');
    const bad = await deploy(d, await image('<h1>bad</h1>', { cmd: null }), 'bad');
    const rev = await settled(d.id, bad);
    expect(rev.status).toBe('DEPLOY_FAILED');
    expect(rev.status_message).toContain('neither an Entrypoint nor a Cmd');
    expect((await get(url))?.text).toBe('<h1>stays</h1>');
    expect((await api().http.get(`/v2/deployments/${d.id}`)).body.active_revision_id).toBe(v1);
  }, 120_000);

  it('an image whose command cannot be executed fails at once naming it (no retries); v1 keeps serving', async () => {
    const { d, v1, url } = await serving('ctr-noexec', '<h1>kept</h1>');
    // A dynamically linked binary of this machine whose loader the image lacks: only exec finds out.
    const dynamic = { data: readFileSync('/usr/bin/env'), mode: 0o755 };
    const foreign = readFileSync('/bin/busybox');
    foreign.writeUInt16LE(0x16, 18); // busybox marked as an s390x ELF
    const cases: { tag: string; options: BusyboxImageOptions; says: string }[] = [
      // Known once the image is unpacked, before any container starts.
      {
        tag: 'missing',
        options: { cmd: ['/bin/not-there', '--serve'] },
        says: "The image's command cannot start: /bin/not-there: no such file or directory.",
      },
      {
        tag: 'noexec',
        options: { cmd: ['/www/ok'] },
        says: "The image's command cannot start: /www/ok: permission denied (no execute bit).",
      },
      {
        tag: 'nocwd',
        options: { workingDir: '/srv/app' },
        says: "The image's WorkingDir /srv/app is not a directory in the image",
      },
      {
        tag: 'foreign',
        options: { cmd: ['/bin/foreign'], files: { '/bin/foreign': { data: foreign, mode: 0o755 } } },
        says: "The image's command cannot start: /bin/foreign: exec format error (a binary for s390x;",
      },
      // At exec: behind the added init (catatonit), and as the image's own init (runc's exec fails).
      {
        tag: 'noloader',
        options: { cmd: ['/bin/dynamic'], files: { '/bin/dynamic': dynamic } },
        says: "The image's command cannot start: /bin/dynamic: no such file or directory.",
      },
      {
        tag: 'initnoloader',
        options: { entrypoint: ['/sbin/tini', '--'], cmd: ['/bin/busybox', 'true'], files: { '/sbin/tini': dynamic } },
        says: "The image's command cannot start: /sbin/tini: no such file or directory.",
      },
    ];
    for (const { tag, options, says } of cases) {
      const bad = await deploy(d, await image(`<h1>${tag}</h1>`, options), tag);
      const rev = await settled(d.id, bad, 60_000);
      expect(rev.status, `${tag}: ${rev.status_message}`).toBe('DEPLOY_FAILED');
      expect(rev.status_message, tag).toContain(says);
      // The first attempt (0) ended it: the reconciler did not retry the phase.
      expect(await attempts(bad), tag).toBe(0);
      expect((await get(url))?.text).toBe('<h1>kept</h1>');
      expect((await api().http.get(`/v2/deployments/${d.id}`)).body.active_revision_id).toBe(v1);
    }
    expect((await liveInstances(d.id)).map((i) => i.revision_id)).toEqual([v1]);
  }, 240_000);

  it('a start runc refuses the same way each time (not an exec failure) fails after bounded attempts with ' +
    "runc's words; v1 keeps serving", async () => {
    const { d, v1, url } = await serving('ctr-runcfail', '<h1>steady</h1>');
    // /tmp a regular file in the image: runc cannot mount the container's tmpfs there, before
    // anything of the image runs, every time (a check of the command finds nothing wrong).
    const bad = await deploy(
      d,
      await image('<h1>no-tmp</h1>', { files: { '/tmp': { data: 'not a directory', mode: 0o644 } } }),
      'notmp',
    );
    const rev = await settled(d.id, bad, 60_000);
    expect(rev.status, rev.status_message).toBe('DEPLOY_FAILED');
    expect(rev.status_message).toMatch(
      /^The container could not be started \(3 attempts, failing each time\): .*\/tmp.*not a directory/,
    );
    // Decided within the rollout's first attempt: the reconciler never had to retry the phase.
    expect(await attempts(bad)).toBe(0);
    const log = await deployLog(bad);
    expect(log).toMatch(
      /The container of instance 0 did not start \(attempt 1 of 3\): .*not a directory; trying again\./,
    );
    expect(log).toMatch(
      /The container of instance 0 did not start \(attempt 2 of 3\): .*not a directory; trying again\./,
    );
    // runc's words once, not the earlier attempts' again.
    expect(rev.status_message.split('error mounting').length - 1).toBe(1);
    expect((await get(url))?.text).toBe('<h1>steady</h1>');
    expect((await api().http.get(`/v2/deployments/${d.id}`)).body.active_revision_id).toBe(v1);
    expect((await liveInstances(d.id)).map((i) => i.revision_id)).toEqual([v1]);
    // One instance row, tried three times, its container removed each time.
    const tried = await api().dataSource.query(`SELECT id, status FROM runtime_processes WHERE revision_id = $1`, [
      bad,
    ]);
    expect(tried).toEqual([{ id: expect.any(String), status: 'exited' }]);
    expect((await new Runc(runcRoot()).list()).map((c) => c.id)).not.toContain(`i-${tried[0].id}`);
  }, 180_000);

  it('an image for another architecture fails saying so; v1 keeps serving', async () => {
    const { d, url } = await serving('ctr-arch', '<h1>amd</h1>');
    const bad = await deploy(d, await image('<h1>arm</h1>', { architecture: 's390x' }), 'arm');
    const rev = await settled(d.id, bad);
    expect(rev.status).toBe('DEPLOY_FAILED');
    expect(rev.status_message).toMatch(/The image is for s390x; this machine runs linux\/amd64 images/);
    expect((await get(url))?.text).toBe('<h1>amd</h1>');
  }, 120_000);

  it('the registry down: DEPLOY_FAILED naming the pull failure; the active revision keeps serving', async () => {
    const { d, v1 } = await serving('ctr-regdown', '<h1>first</h1>');
    const v2 = await deploy(d, await image('<h1>second</h1>'), 'second');
    expect((await settled(d.id, v2)).status).toBe('DEPLOYED');
    const url = await servingUrl(d.id);
    // v1's image is no longer on this machine, and the registry is gone: a redeploy must pull.
    const digest = (await revision(d.id, v1)).image_digest as string;
    rmSync(path.join(imagesDir(), digest.slice(7)), { recursive: true, force: true });
    await runtime.stand.registry.stop();
    try {
      const res = await api().http.post(`/v2/deployments/${d.id}/revisions/${v1}/redeploy`);
      expect(res.status, res.text).toBe(200);
      const rev = await settled(d.id, res.body.latest_revision_id);
      expect(rev.status).toBe('DEPLOY_FAILED');
      expect(rev.status_message).toMatch(/^Pulling .* failed: .*connection refused/i);
      expect((await get(url))?.text).toBe('<h1>second</h1>');
      expect((await api().http.get(`/v2/deployments/${d.id}`)).body.active_revision_id).toBe(v2);
    } finally {
      runtime.stand.registry = await startRegistry(api().config);
    }
  }, 180_000);

  it('a digest the registry no longer has: DEPLOY_FAILED naming it unknown; the active revision keeps serving', async () => {
    const { d, v1 } = await serving('ctr-unknown', '<h1>gone</h1>');
    const v2 = await deploy(d, await image('<h1>here</h1>'), 'here');
    expect((await settled(d.id, v2)).status).toBe('DEPLOYED');
    const url = await servingUrl(d.id);
    // v1's manifest leaves the registry's storage (as a deletion would), and this machine's copy goes.
    const digest = (await revision(d.id, v1)).image_digest as string;
    const link = path.join(
      api().config.registry.storageDir,
      'storage/docker/registry/v2/repositories',
      d.id,
      'web/_manifests/revisions/sha256',
      digest.slice(7),
    );
    expect(existsSync(link)).toBe(true);
    rmSync(link, { recursive: true, force: true });
    rmSync(path.join(imagesDir(), digest.slice(7)), { recursive: true, force: true });
    const res = await api().http.post(`/v2/deployments/${d.id}/revisions/${v1}/redeploy`);
    expect(res.status, res.text).toBe(200);
    const rev = await settled(d.id, res.body.latest_revision_id);
    expect(rev.status).toBe('DEPLOY_FAILED');
    expect(rev.status_message).toMatch(/^Pulling .* failed: .*manifest unknown/i);
    expect((await get(url))?.text).toBe('<h1>here</h1>');
  }, 180_000);

  it('a corrupt layer in the registry fails the pull on its digest; v1 keeps serving', async () => {
    const { d, url } = await serving('ctr-corrupt', '<h1>intact</h1>');
    const img = await image('<h1>corrupt</h1>');
    const pushed = await skopeoPush(img, `${d.registryUrl}/web:corrupt`, `oauth2accesstoken:${d.token}`);
    expect(pushed.ok, pushed.output).toBe(true);
    // The layer's bytes in the registry's storage change; its name (digest) does not.
    const manifest = JSON.parse(readFileSync(path.join(img.dir, 'blobs/sha256', img.manifestDigest.slice(7)), 'utf8'));
    const layer = (manifest.layers[0].digest as string).slice(7);
    const data = path.join(
      api().config.registry.storageDir,
      'storage/docker/registry/v2/blobs/sha256',
      layer.slice(0, 2),
      layer,
      'data',
    );
    const bytes = readFileSync(data);
    bytes[bytes.length - 20] ^= 0xff;
    writeFileSync(data, bytes);
    const res = await api().http.patch(`/v2/deployments/${d.id}`, {
      revision_source: 'internal_docker',
      source_revision_config: { image_uri: `${d.registryUrl}/web:corrupt` },
    });
    expect(res.status, res.text).toBe(200);
    const rev = await settled(d.id, res.body.latest_revision_id);
    expect(rev.status).toBe('DEPLOY_FAILED');
    expect(rev.status_message).toMatch(/^Pulling .* failed: .*digest/i);
    expect((await get(url))?.text).toBe('<h1>intact</h1>');
  }, 120_000);

  it('redeploying v1 after v2 serves v1 from the unpacked image, without a pull', async () => {
    const { d, v1, url } = await serving('ctr-redeploy', '<h1>old</h1>');
    const v2 = await deploy(d, await image('<h1>new</h1>'), 'new');
    expect((await settled(d.id, v2)).status).toBe('DEPLOYED');
    const digest = (await revision(d.id, v1)).image_digest as string;
    const unpacked = path.join(imagesDir(), digest.slice(7));
    const before = statSync(unpacked).ino;
    const res = await api().http.post(`/v2/deployments/${d.id}/revisions/${v1}/redeploy`);
    expect(res.status, res.text).toBe(200);
    const again = res.body.latest_revision_id as string;
    expect(again).not.toBe(v1);
    const rev = await settled(d.id, again);
    expect(rev.status, rev.status_message).toBe('DEPLOYED');
    await eventually(
      () => get(url),
      (r) => r?.text === '<h1>old</h1>',
      10_000,
    );
    const log = await deployLog(again);
    expect(log).toContain(`Image ${digest} is already unpacked on this machine; no pull.`);
    expect(log).not.toContain('Pulled and unpacked');
    expect(statSync(unpacked).ino).toBe(before);
  }, 180_000);

  it('a container over its memory limit ends DEPLOY_FAILED with "out of memory" in status_message', async () => {
    const d = await createDeployment('ctr-oom');
    const hog = await image('<h1>hog</h1>', {
      cmd: ['/bin/busybox', 'sh', '-c', 'exec /bin/busybox dd if=/dev/zero of=/dev/null bs=96M count=1'],
    });
    const id = await deploy(d, hog, 'hog', { source_config: { resource_spec: { memory_mb: 24 } } });
    const rev = await settled(d.id, id);
    expect(rev.status).toBe('DEPLOY_FAILED');
    expect(rev.status_message).toContain('out of memory (limit 24 MB)');
  }, 120_000);

  it('a serving container killed out of memory is restarted, and the deploy log names the cause', async () => {
    const d = await createDeployment('ctr-oom-later');
    // Serves, then (once the rollout is done) something in it outgrows the limit; the server goes with it.
    const script =
      '/bin/busybox httpd -f -p "$PORT" -h /www & sleep 6; /bin/busybox dd if=/dev/zero of=/dev/null bs=96M count=1; kill $!; wait';
    const id = await deploy(d, await image('<h1>later</h1>', { cmd: ['/bin/busybox', 'sh', '-c', script] }), 'later', {
      source_config: { resource_spec: { memory_mb: 24 } },
    });
    const rev = await settled(d.id, id);
    expect(rev.status, rev.status_message).toBe('DEPLOYED');
    await eventually(
      () => deployLog(id),
      (log) => log.includes('was killed: out of memory (limit 24 MB); restarting'),
      60_000,
      500,
    );
  }, 120_000);

  it('a deployer kill -9 leaves the container serving; the next deployer re-adopts it without a restart', async () => {
    const { d, url } = await serving('ctr-adopt', '<h1>adopt</h1>');
    const [before] = await liveInstances(d.id);
    runtime.deployer.child.kill('SIGKILL');
    await runtime.deployer.exited;
    const direct = await get(`http://${before!.address}:${before!.port}/`);
    expect(direct?.text).toBe('<h1>adopt</h1>');
    expect(new Runc(runcRoot()).isRunning(`i-${before!.id}`)).toBe(true);
    runtime.deployer = await startService('deployer', deployerEnv());
    await eventually(
      () => get(url),
      (r) => r?.text === '<h1>adopt</h1>',
      30_000,
    );
    await runtime.deployer.waitFor(/re-adopted a running instance/, 30_000);
    const after = await liveInstances(d.id);
    expect(after.map((i) => ({ id: i.id, pid: i.pid }))).toEqual([{ id: before!.id, pid: before!.pid }]);
  }, 180_000);

  it('a crashed container is restarted and serves again', async () => {
    const { d, url } = await serving('ctr-crash', '<h1>phoenix</h1>');
    await crashAndRecover(d.id, url, '<h1>phoenix</h1>');
  }, 120_000);
});

describe('external_container without a listener', () => {
  async function externalRevision(name: string, imageUri: string) {
    const created = await api().http.post('/v2/deployments', {
      name,
      source: 'external_container',
      source_config: {},
      source_revision_config: { image_uri: imageUri },
    });
    expect(created.status, created.text).toBe(201);
    return settled(created.body.id, created.body.latest_revision_id);
  }

  it('pulls nothing from a registry on a loopback or private address that the outbound allow-list does not name', async () => {
    const rev = await externalRevision('ext-loopback', '127.0.0.1:1/team/web:v1');
    expect(rev.status).toBe('DEPLOY_FAILED');
    expect(rev.status_message).toBe(
      'Slipway does not pull images from 127.0.0.1:1: it is a loopback address ' +
        '(SLIPWAY_OUTBOUND_ALLOW_HOSTS lists hosts that may be reached anyway).',
    );
  }, 90_000);

  it("never uses the platform credential for another deployment's repository of the built-in registry: " +
    'a 422 on create and PATCH, nothing written', async () => {
    const other = await serving('ctr-victim', '<h1>private</h1>');
    const stolen = `${other.d.registryUrl}/web:v1`;
    const refusal = {
      loc: ['body', 'source_revision_config', 'image_uri'],
      msg: expect.stringContaining("another deployment's repository of the built-in registry"),
    };
    const created = await api().http.post('/v2/deployments', {
      name: 'ext-thief',
      source: 'external_container',
      source_config: {},
      source_revision_config: { image_uri: stolen },
    });
    expect(created.status, created.text).toBe(422);
    expect(created.body.detail).toEqual([expect.objectContaining(refusal)]);
    // A deployment of its own (its image is nowhere: it fails), then PATCHed to the stolen image.
    const own = await api().http.post('/v2/deployments', {
      name: 'ext-thief-2',
      source: 'external_container',
      source_config: {},
      source_revision_config: { image_uri: '127.0.0.1:1/team/web:v1' },
    });
    expect(own.status, own.text).toBe(201);
    const patched = await api().http.patch(`/v2/deployments/${own.body.id}`, {
      source_revision_config: { image_uri: stolen },
    });
    expect(patched.status, patched.text).toBe(422);
    expect(patched.body.detail).toEqual([expect.objectContaining(refusal)]);
    expect((await api().http.get(`/v2/deployments/${own.body.id}`)).body.latest_revision_id).toBe(
      own.body.latest_revision_id,
    );
  }, 120_000);
});

describe('unpacked images', () => {
  it('are removed once no revision of a remaining deployment uses them', async () => {
    const { d, v1 } = await serving('ctr-prune', '<h1>pruned</h1>');
    const digest = (await revision(d.id, v1)).image_digest as string;
    expect(readdirSync(imagesDir())).toContain(digest.slice(7));
    expect((await api().http.delete(`/v2/deployments/${d.id}`)).status).toBeLessThan(300);
    await eventually(
      async () => readdirSync(imagesDir()),
      (entries) => !entries.includes(digest.slice(7)),
      60_000,
      500,
    );
  }, 120_000);
});
