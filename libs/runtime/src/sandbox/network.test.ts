import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nonLoopbackAddress, tryConnect } from '../../../../test/support/ports.js';
import { NFT_TABLE } from './network.js';
import { setUpSandbox, SandboxUnavailableError, type Sandbox } from './sandbox.js';

const run = promisify(execFile);

/**
 * The sandbox's nftables rules on this machine (root, nftables): set up as the deployer does, for
 * a uid range of this test alone, and removed afterwards.
 */
const uidMin = 1_000_000 + randomInt(0, 1_000_000) * 1000;
const uidMax = uidMin + 999;
let sandbox: Sandbox | null = null;
let unavailable = process.getuid?.() === 0 ? '' : 'the sandbox needs root';

beforeAll(async () => {
  if (unavailable) return;
  // The network setup never reads the database (only uid allocation does).
  const noDatabase = { query: () => Promise.reject(new Error('no database in this test')) };
  const settings = { mode: 'auto' as const, uidMin, uidMax, pidsMax: 64, openFiles: 1024, defaultMemoryMb: 256 };
  sandbox = await setUpSandbox(settings, noDatabase).catch((err) => {
    if (!(err instanceof SandboxUnavailableError)) throw err;
    unavailable = err.message;
    return null;
  });
});

afterAll(async () => {
  await sandbox?.network.remove();
});

describe('the sandbox network rules: instance ports', () => {
  it('has an input chain that lets instance ports take connections to loopback addresses only', async (ctx) => {
    if (!sandbox) return ctx.skip(unavailable);
    const { stdout } = await run('nft', ['list', 'chain', 'inet', NFT_TABLE, `in_${uidMin}_${uidMax}`]);
    const set = `@instances_${uidMin}_${uidMax}`;
    expect(stdout).toMatch(/type filter hook input priority (filter|0); policy accept;/);
    expect(stdout).toContain(`tcp dport ${set} ip daddr 127.0.0.0/8 accept`);
    expect(stdout).toContain(`tcp dport ${set} ip6 daddr ::1 accept`);
    expect(stdout).toMatch(new RegExp(`tcp dport ${set} drop\\n`));
  });

  it("drops connections to a guarded port through the machine's own non-loopback address while 127.0.0.1 connects", async (ctx) => {
    if (!sandbox) return ctx.skip(unavailable);
    const address = nonLoopbackAddress();
    if (!address) return ctx.skip('this machine has no non-loopback IPv4 address to connect through');
    // An app that binds every interface instead of 127.0.0.1.
    const server: Server = createServer((socket) => socket.end());
    await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
    const { port } = server.address() as { port: number };
    try {
      // Open before the guard: the address is reachable, so what follows is the rule's doing.
      expect(await tryConnect(address, port)).toBe('connected');
      await sandbox.network.guardInstancePort(port);
      expect(await tryConnect('127.0.0.1', port)).toBe('connected');
      expect(await tryConnect(address, port)).toBe('timeout');
      await sandbox.network.releaseInstancePort(port);
      expect(await tryConnect(address, port)).toBe('connected');
    } finally {
      await sandbox.network.releaseInstancePort(port);
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
