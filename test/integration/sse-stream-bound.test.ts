import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { SseClient } from '../support/sse.js';
import { eventually } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The bound on open event streams per API key (issue 32): SLIPWAY_SSE_STREAMS_PER_KEY streams
 * of one key are open at once, across api processes (leases in Redis); one more is a 429 naming
 * the bound, with Retry-After, until one closes; another key is not affected.
 */
const BOUND = 3;
let api: TestApi;
const open: SseClient[] = [];

beforeAll(async () => {
  api = await startTestApi({ SLIPWAY_SSE_STREAMS_PER_KEY: String(BOUND) });
});
afterAll(async () => {
  for (const s of open) s.close();
  await api?.close();
});

/** An events stream of `key`, once it is open (its first comment arrived). */
async function stream(key: string): Promise<SseClient> {
  const s = new SseClient(`${api.baseUrl}/v2/events/stream`, { 'x-api-key': key });
  open.push(s);
  await eventually(
    async () => s.comments > 0 || s.ended,
    (ok) => ok,
    10_000,
    50,
  );
  expect(s.status).toBe(200);
  return s;
}

const refused = (key: string, path = '/v2/events/stream') =>
  fetch(`${api.baseUrl}${path}`, { headers: { 'x-api-key': key, accept: 'text/event-stream' } });

describe('open event streams per API key', () => {
  it(`opens ${BOUND}, refuses one more with 429, frees a slot when one closes; another key is unaffected`, async () => {
    const key = await api.mintKey({});
    const streams = [];
    for (let i = 0; i < BOUND; i++) streams.push(await stream(key));

    const over = await refused(key);
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toMatch(/^\d+$/);
    const body = (await over.json()) as { detail: string };
    expect(body.detail).toContain(`At most ${BOUND} event streams`);
    expect(body.detail).toContain('SLIPWAY_SSE_STREAMS_PER_KEY');
    // A log follow is a stream too: the same bound.
    const d = await api.http.post('/v2/deployments', {
      name: 'sse-bound',
      source: 'external_container',
      source_config: {},
      source_revision_config: { image_uri: 'registry.example/a:1' },
    });
    expect(d.status, d.text).toBe(201);
    const follow = await refused(
      key,
      `/v2/deployments/${d.body.id}/revisions/${d.body.latest_revision_id}/logs?type=deploy&follow=true`,
    );
    expect(follow.status).toBe(429);
    await follow.body?.cancel();

    // The admin key (another key) still opens streams.
    await stream(api.adminKey);

    // One closes: its slot frees (the stream's end releases its lease).
    streams[0]!.close();
    const again = await eventually(
      async () => {
        const res = await refused(key);
        if (res.status !== 200) await res.body?.cancel();
        return res;
      },
      (res) => res.status === 200,
      10_000,
      100,
    );
    await again.body?.cancel();
  });

  it('holds each slot as a lease that expires in Redis, so a crashed api frees its slots', async () => {
    const key = await api.mintKey({});
    await stream(key);
    const redis = new Redis(api.config.redisUrl);
    try {
      const keys = await redis.keys(`${api.config.queuePrefix}:sse-streams:*`);
      expect(keys.length).toBeGreaterThan(0);
      for (const k of keys) {
        const ttl = await redis.pttl(k);
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(60_000);
      }
    } finally {
      redis.disconnect();
    }
  });
});
