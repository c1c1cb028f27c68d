import path from 'node:path';
import { statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RuntimeStand } from '../support/runtime-stand.js';
import { eventually } from '../support/service-process.js';

/**
 * Unpacked images of the embedded container runtime are no cross-tenant cache (issue 20): a
 * digest unpacked for one deployment serves another only once the registry lets that one read
 * it, while the owner's rollbacks and restarts reuse it without a pull. Real api, deployer,
 * registry (CNCF distribution) and runc; hand-built busybox images pushed with skopeo. Needs
 * root (the sandbox), runc, skopeo, umoci and catatonit.
 */
const PORT_MIN = 37_000 + Math.floor(Math.random() * 900);
const runtime = new RuntimeStand({
  SLIPWAY_RUNTIME_PORT_MIN: String(PORT_MIN),
  SLIPWAY_RUNTIME_PORT_MAX: String(PORT_MIN + 99),
  SLIPWAY_ROLLOUT_DEADLINE_MS: '60000',
});
const { image, createDeployment, deploy, revision, settled, get, deployLog, crashAndRecover, serving } =
  runtime.helpers();
const { api, imagesDir } = runtime;

beforeAll(() => runtime.start(), 90_000);
afterAll(() => runtime.close(), 120_000);

describe('unpacked images', () => {
  it("serve no other deployment by their digest; the owner's rollback and crash restarts still reuse them without a pull", async () => {
    const { d: owner, v1, url } = await serving('ctr-owner', '<h1>owner only</h1>');
    const digest = (await revision(owner.id, v1)).image_digest as string;
    const unpacked = path.join(imagesDir(), digest.slice(7));
    const inode = statSync(unpacked).ino;
    // internal_docker: the digest is resolved against the thief's own repository (or refused for the owner's): 422.
    const thief = await createDeployment('ctr-thief');
    for (const uri of [`${thief.registryUrl}/web@${digest}`, `${owner.registryUrl}/web@${digest}`]) {
      const res = await api().http.patch(`/v2/deployments/${thief.id}`, {
        revision_source: 'internal_docker',
        source_revision_config: { image_uri: uri },
      });
      expect(res.status, res.text).toBe(422);
    }
    expect((await api().http.get(`/v2/deployments/${thief.id}`)).body.latest_revision_id).toBeNull();
    // external_container: its own (empty) repository of the built-in registry, with the owner's digest.
    const ext = await api().http.post('/v2/deployments', {
      name: 'ext-borrower',
      source: 'external_container',
      source_config: {},
      source_revision_config: { image_uri: '127.0.0.1:1/none/web:v1' },
    });
    expect(ext.status, ext.text).toBe(201);
    await settled(ext.body.id, ext.body.latest_revision_id);
    const host = owner.registryUrl.slice(0, owner.registryUrl.indexOf('/'));
    const patched = await api().http.patch(`/v2/deployments/${ext.body.id}`, {
      source_revision_config: { image_uri: `${host}/${ext.body.id}/web@${digest}` },
    });
    expect(patched.status, patched.text).toBe(200);
    const borrowed = await settled(ext.body.id, patched.body.latest_revision_id);
    expect(borrowed.status).toBe('DEPLOY_FAILED');
    const borrowedLog = await deployLog(borrowed.id);
    expect(borrowedLog).not.toContain('already unpacked');
    expect(borrowedLog).not.toContain('Pulled and unpacked');
    expect(borrowed.status_message).toMatch(
      new RegExp(
        `Image ${digest} is unpacked on this machine, but the registry does not let this revision read it from ` +
          `[^ ]+/${ext.body.id}/web: .*manifest unknown`,
        'i',
      ),
    );
    // The owner's repository itself is refused before any revision is made.
    const named = await api().http.patch(`/v2/deployments/${ext.body.id}`, {
      source_revision_config: { image_uri: `${owner.registryUrl}/web@${digest}` },
    });
    expect(named.status, named.text).toBe(422);
    expect((await api().http.get(`/v2/deployments/${ext.body.id}`)).body.latest_revision_id).toBe(
      patched.body.latest_revision_id,
    );
    const revs = (await api().http.get(`/v2/deployments/${ext.body.id}/revisions`)).body.resources as {
      status: string;
    }[];
    expect(revs.map((r) => r.status)).not.toContain('DEPLOYED');
    expect((await get(url))?.text).toBe('<h1>owner only</h1>');
    // The owner rolls back to the digest after another: the unpacked copy, no pull, no registry call needed.
    const v2 = await deploy(owner, await image('<h1>owner v2</h1>'), 'v2');
    expect((await settled(owner.id, v2)).status).toBe('DEPLOYED');
    const back = await api().http.post(`/v2/deployments/${owner.id}/revisions/${v1}/redeploy`);
    expect(back.status, back.text).toBe(200);
    const again = back.body.latest_revision_id as string;
    const rev = await settled(owner.id, again);
    expect(rev.status, rev.status_message).toBe('DEPLOYED');
    const log = await deployLog(again);
    expect(log).toContain(`Image ${digest} is already unpacked on this machine; no pull.`);
    expect(log).not.toContain('Pulled and unpacked');
    expect(statSync(unpacked).ino).toBe(inode);
    await eventually(
      () => get(url),
      (r) => r?.text === '<h1>owner only</h1>',
      10_000,
    );
    // A crash restart still starts it.
    await crashAndRecover(owner.id, url, '<h1>owner only</h1>');
  }, 300_000);
});
