import type { IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ApiKeyCache, RateLimits } from '@slipway/access';
import type { DataSource } from '@slipway/db';
import { ServingAuth } from './serving-auth.js';

/**
 * The serving gate's policy cache when Postgres falters: the policy last read keeps deciding
 * while a re-read fails (the deployment keeps serving under its known rules), and only a policy
 * never read fails the request. Postgres is a stand-in here (a query function that answers or
 * throws on demand): the point is what the gate does when its read fails, which a real
 * database only does under load.
 */

/** An image revision that is an agent server with no auth handler of its own: a key is required. */
const AGENT_ROW = {
  workspace_id: 'ws',
  organization_id: 'org',
  serving_auth: null,
  artifact_ref: null,
  source: 'internal_docker',
  agent_server: true,
  agent_server_auth_path: null,
};

function gate(answer: () => unknown[]) {
  const query = vi.fn(async () => answer());
  const dataSource = { manager: { query } } as unknown as DataSource;
  const limits = { consume: vi.fn(async () => {}) } as unknown as RateLimits;
  const auth = new ServingAuth({ dataSource, keys: {} as ApiKeyCache, limits });
  return { auth, query };
}

const keyless = () =>
  ({
    method: 'GET',
    url: '/threads',
    headers: {},
    socket: { remoteAddress: '10.0.0.9' },
  }) as unknown as IncomingMessage;

afterEach(() => vi.restoreAllMocks());

describe('ServingAuth when the policy cannot be read again', () => {
  it('keeps deciding with the policy last read, and reads again after a second', async () => {
    let down = false;
    const { auth, query } = gate(() => {
      if (down) throw new Error('timeout exceeded when trying to connect');
      return [AGENT_ROW];
    });
    let now = 1_000_000;
    vi.spyOn(Date, 'now').mockImplementation(() => now);
    expect((await auth.check('d1', keyless()))?.status).toBe(401);
    expect(query).toHaveBeenCalledTimes(1);

    // Past the policy's life, Postgres fails: the known policy still decides (401, not a thrown error).
    now += 11_000;
    down = true;
    expect((await auth.check('d1', keyless()))?.status).toBe(401);
    expect(query).toHaveBeenCalledTimes(2);
    // Not asked again within the retry pause; asked again after it.
    now += 500;
    expect((await auth.check('d1', keyless()))?.status).toBe(401);
    expect(query).toHaveBeenCalledTimes(2);
    now += 1_000;
    down = false;
    expect((await auth.check('d1', keyless()))?.status).toBe(401);
    expect(query).toHaveBeenCalledTimes(3);
  });

  it('fails the request while no policy was ever read, and reads again at the next request', async () => {
    let down = true;
    const { auth, query } = gate(() => {
      if (down) throw new Error('timeout exceeded when trying to connect');
      return [AGENT_ROW];
    });
    await expect(auth.check('d2', keyless())).rejects.toThrow(/timeout/);
    down = false;
    expect((await auth.check('d2', keyless()))?.status).toBe(401);
    expect(query).toHaveBeenCalledTimes(2);
  });
});
