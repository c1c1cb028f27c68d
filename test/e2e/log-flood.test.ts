import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeApp, startCodeDeployStand, type CodeDeployStand } from '../support/code-deploy-stand.js';
import { FLOOD_BYTES, LOG_FLOOD_SERVER } from '../support/hostile-app.js';
import { eventually } from '../support/service-process.js';

/**
 * Issue 24 item 4: an app that writes a newline-free 64 MB flood to stdout cannot grow the
 * deployer's memory (which hosts every deployment's serving proxy): the real api, builder and
 * deployer, two deployments in the sandboxed process runtime. The deploy log keeps 64 KiB of the
 * flood's one line and says how many bytes it dropped; the deployer's resident memory (VmRSS in
 * /proc/<pid>/status, sampled while the flood is copied) stays within a generous bound; both
 * deployments keep serving.
 */
const LINE_CAP = 64 * 1024;
/**
 * Generous on purpose: the deployer's heap moves by tens of MB on its own; the flood is 64 MB, held whole it would be
 * several times that.
 */
const RSS_GROWTH_BOUND = 200 * 1024 * 1024;

let stand: CodeDeployStand;

beforeAll(async () => {
  // A log file cap above the flood: no rotation, so every byte of the flood reaches the tailer.
  stand = await startCodeDeployStand({}, { SLIPWAY_RUNTIME_LOG_FILE_MB: '256' });
  stand.commit('flood', nodeApp('flood', LOG_FLOOD_SERVER));
  stand.commit('calm', nodeApp('calm', LOG_FLOOD_SERVER));
}, 120_000);

afterAll(async () => {
  await stand?.close();
}, 60_000);

function deployerRss(): number {
  const status = readFileSync(`/proc/${stand.services.deployer.child.pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) * 1024;
}

describe('a newline-free flood on stdout', () => {
  it("keeps 64 KiB of the line, drops the rest with a count, and the deployer's memory bounded; " +
    'every deployment keeps serving', async () => {
    const flood = await stand.deploy('flood');
    const calm = await stand.deploy('calm');
    for (const d of [flood, calm])
      expect((await stand.untilDone(d.deploymentId, d.revisionId)).status).toBe('DEPLOYED');
    const urlOf = async (id: string) => (await stand.http.get(`/v2/deployments/${id}`)).body.url as string;
    const [floodUrl, calmUrl] = [await urlOf(flood.deploymentId), await urlOf(calm.deploymentId)];

    const before = deployerRss();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, deployerRss())), 100);
    try {
      expect(await (await fetch(`${floodUrl}/flood`, { signal: AbortSignal.timeout(120_000) })).text()).toBe('flooded');
      // While the deployer copies the flood, the other deployment answers through its proxy.
      expect((await fetch(calmUrl, { signal: AbortSignal.timeout(10_000) })).status).toBe(200);
      const lines = await eventually(
        () => stand.logLines(flood.deploymentId, flood.revisionId, 'deploy'),
        (l) => l.includes('flood done'),
        180_000,
        500,
      );
      const line = lines.find((l) => l.startsWith('FFFF'));
      expect(line).toBe(`${'F'.repeat(LINE_CAP)}… [${FLOOD_BYTES - LINE_CAP} bytes dropped]`);
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, deployerRss());
    console.log(
      `deployer RSS before the flood ${(before / 2 ** 20).toFixed(0)} MB, peak ${(peak / 2 ** 20).toFixed(0)} MB`,
    );
    expect(peak - before, `deployer RSS ${before} → peak ${peak}`).toBeLessThan(RSS_GROWTH_BOUND);
    for (const url of [floodUrl, calmUrl])
      expect((await fetch(url, { signal: AbortSignal.timeout(10_000) })).status).toBe(200);
  }, 420_000);
});
