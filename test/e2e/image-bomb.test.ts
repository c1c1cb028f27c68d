import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RuntimeStand } from '../support/runtime-stand.js';
import { eventually } from '../support/service-process.js';

/**
 * An image's unpacked bytes are bounded and counted (issue 32, image decompression bomb): a
 * small push whose layer inflates hugely is refused while its layers are counted, before umoci
 * writes a byte, with SLIPWAY_IMAGE_MAX_UNPACKED_MB lowered for the test; the workspace's
 * `registry_bytes` quota counts what its images unpack to, the refused bomb included. Real api,
 * deployer, registry (CNCF distribution) and runc; hand-built busybox images pushed with skopeo.
 * Needs root (the sandbox), runc, skopeo, umoci and catatonit.
 */
const MB = 1024 * 1024;
const PORT_MIN = 38_000 + Math.floor(Math.random() * 900);
const runtime = new RuntimeStand({
  SLIPWAY_RUNTIME_PORT_MIN: String(PORT_MIN),
  SLIPWAY_RUNTIME_PORT_MAX: String(PORT_MIN + 99),
  SLIPWAY_ROLLOUT_DEADLINE_MS: '60000',
  SLIPWAY_IMAGE_MAX_UNPACKED_MB: '16',
});
const { image, deploy, revision, settled, get, serving } = runtime.helpers();
const { api, imagesDir } = runtime;

beforeAll(() => runtime.start(), 90_000);
afterAll(() => runtime.close(), 120_000);

async function usage(): Promise<{
  registry_bytes: number;
  registry_stored_bytes: number;
  registry_unpacked_bytes: number;
}> {
  const res = await api().http.get(`/v2/workspaces/${api().workspaceId}/quotas`);
  expect(res.status, res.text).toBe(200);
  return res.body.usage;
}

describe('image decompression bombs', () => {
  it('are refused before they are unpacked, leaving nothing on disk; the quota counts what images unpack to', async () => {
    const { d, v1, url } = await serving('bomb-target', '<h1>still here</h1>');
    const v1Digest = (await revision(d.id, v1)).image_digest as string;
    // The image that was unpacked counts its unpacked bytes (busybox: a couple of MB) besides the compressed ones.
    const before = await eventually(usage, (u) => u.registry_unpacked_bytes > MB, 10_000);
    expect(before.registry_bytes).toBe(before.registry_stored_bytes + before.registry_unpacked_bytes);
    const [row] = await api().dataSource.query(
      `SELECT unpacked_bytes FROM registry_blobs WHERE repository = $1 AND digest = $2`,
      [`${d.id}/web`, v1Digest],
    );
    expect(Number(row.unpacked_bytes)).toBe(before.registry_unpacked_bytes);

    // 64 MB of zeros: a layer of well under 1 MB compressed, four times the lowered bound once inflated.
    const bomb = await image('<h1>bomb</h1>', { files: { '/bomb': { data: Buffer.alloc(64 * MB), mode: 0o644 } } });
    const v2 = await deploy(d, bomb, 'bomb');
    const failed = await settled(d.id, v2);
    expect(failed.status).toBe('DEPLOY_FAILED');
    expect(failed.status_message).toMatch(
      /^Image \S+@sha256:[0-9a-f]{64} unpacks to more than 16 MB .*\(SLIPWAY_IMAGE_MAX_UNPACKED_MB=16\); nothing of it was unpacked/,
    );
    const bombDigest = failed.image_digest as string;
    // The compressed push was small (busybox and 64 KB of gzipped zeros): the registry's bytes alone never saw it coming.
    expect((await usage()).registry_stored_bytes - before.registry_stored_bytes).toBeLessThan(2 * MB);
    // Nothing of it on disk: no unpacked copy, no scratch of the pull.
    expect(readdirSync(imagesDir()).filter((e) => !e.startsWith('.grant'))).toEqual([v1Digest.slice(7)]);
    // The quota counts what was inflated before the refusal: more than the bound.
    const after = await eventually(usage, (u) => u.registry_unpacked_bytes > before.registry_unpacked_bytes, 10_000);
    expect(after.registry_unpacked_bytes - before.registry_unpacked_bytes).toBeGreaterThan(16 * MB);
    expect(after.registry_unpacked_bytes - before.registry_unpacked_bytes).toBeLessThan(32 * MB);
    const [bombRow] = await api().dataSource.query(
      `SELECT unpacked_bytes FROM registry_blobs WHERE repository = $1 AND digest = $2`,
      [`${d.id}/web`, bombDigest],
    );
    expect(Number(bombRow.unpacked_bytes)).toBeGreaterThan(16 * MB);
    // The old version kept serving.
    expect((await get(url))?.text).toBe('<h1>still here</h1>');
  }, 300_000);
});
