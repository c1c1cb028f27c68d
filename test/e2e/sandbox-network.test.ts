import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxNetwork } from '@slipway/runtime';
import { nodeApp, startCodeDeployStand, type CodeDeployStand } from '../support/code-deploy-stand.js';
import { NETNS_PROBE_SERVER } from '../support/netns-probe-app.js';
import { eventually, serviceEnv, startService } from '../support/service-process.js';
import { nonLoopbackAddress } from '../support/ports.js';
import { freeTestNetwork, startTestHost, type TestHost } from '../support/test-netns.js';

/**
 * Each sandbox in a network namespace of its own (issue 24), through the real api, builder and
 * deployer with the sandbox on (root, bubblewrap, nftables, iproute2): an app that reports what
 * its network lets it do, and two stand-in hosts in namespaces this test creates — one on a
 * private address (the compose network's Postgres) and one on a public-shaped TEST-NET-3 address
 * that the operator allow-list names. Every address the app is asked to reach is held by this
 * test's own namespaces or by this machine, so a broken policy still keeps packets here.
 */
const ALLOWED = '203.0.113.0/24';
let stand: CodeDeployStand;
let app: { deploymentId: string; url: string };
let privateHost: TestHost;
/** Stand-ins on the other private, shared and link-local ranges. */
let otherPrivateHosts: TestHost[] = [];
let publicHost: TestHost;
/** A second deployment: another tenant's sandbox. */
let neighbour: { deploymentId: string; revisionId: string; url: string };

const ask = async (path: string) => {
  const res = await fetch(`${app.url}${path}`, { signal: AbortSignal.timeout(20_000) });
  expect(res.status, path).toBe(200);
  return (await res.json()) as any;
};

/** What answers on the host at host:port: the first bytes, or the connection error. */
function hostAnswer(host: string, port: number, send: string): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    let text = '';
    const done = (r: string) => (s.destroy(), resolve(r));
    s.setTimeout(3_000, () => done(text || 'timeout'));
    s.once('connect', () => s.write(send));
    s.on('data', (d) => ((text += d.toString()), done(text)));
    s.once('error', (e: NodeJS.ErrnoException) => done(e.code ?? String(e)));
  });
}

async function instance(
  deploymentId = app.deploymentId,
): Promise<{ address: string; port: number; pid: number; id: string }> {
  const [row] = await stand.api.dataSource.query(
    `SELECT id, address, port, pid FROM runtime_processes WHERE deployment_id = $1 AND status = 'running'`,
    [deploymentId],
  );
  return row;
}

async function fronts(deploymentId = app.deploymentId): Promise<{ postgres: number; redis: number; trace: number }> {
  const [row] = await stand.api.dataSource.query(
    `SELECT postgres_front_port, redis_front_port, trace_front_port FROM deployment_credentials WHERE deployment_id = $1`,
    [deploymentId],
  );
  return {
    postgres: Number(row.postgres_front_port),
    redis: Number(row.redis_front_port),
    trace: Number(row.trace_front_port),
  };
}

beforeAll(async () => {
  // The stand-in hosts exist before any app could send them anything.
  // Each on a /30 none of this machine's own destinations (DNS, the npm registry) sits in.
  privateHost = await startTestHost(await freeTestNetwork(`172.31.${Math.floor(Math.random() * 250)}`), 5432);
  publicHost = await startTestHost(await freeTestNetwork('203.0.113'), 443);
  for (const prefix of ['10.150.7', '192.168.251', '100.64.9', '169.254.77'])
    otherPrivateHosts.push(await startTestHost(await freeTestNetwork(prefix), 6379));
  stand = await startCodeDeployStand({ SLIPWAY_SANDBOX_ALLOW_CIDRS: ALLOWED });
  for (const service of [stand.services.builder, stand.services.deployer])
    expect(service.output()).not.toMatch(/UNSANDBOXED|sandbox is unavailable/i);
  stand.commit('netprobe', nodeApp('netprobe', NETNS_PROBE_SERVER));
  const d = await stand.deploy('netprobe');
  const rev = await stand.untilDone(d.deploymentId, d.revisionId);
  expect(rev.status, rev.status_message).toBe('DEPLOYED');
  app = { deploymentId: d.deploymentId, url: (await stand.http.get(`/v2/deployments/${d.deploymentId}`)).body.url };
  // Its build installs a real package: DNS and the npm registry from a build's namespace.
  const neighbourApp = nodeApp('neighbour', NETNS_PROBE_SERVER);
  neighbourApp['package.json'] = JSON.stringify({
    ...JSON.parse(neighbourApp['package.json']!),
    dependencies: { 'is-number': '7.0.0' },
  });
  stand.commit('neighbour', neighbourApp);
  const n = await stand.deploy('neighbour');
  const nRev = await stand.untilDone(n.deploymentId, n.revisionId);
  expect(nRev.status, nRev.status_message).toBe('DEPLOYED');
  neighbour = {
    deploymentId: n.deploymentId,
    revisionId: n.revisionId,
    url: (await stand.http.get(`/v2/deployments/${n.deploymentId}`)).body.url,
  };
}, 400_000);

afterAll(async () => {
  await stand?.close();
  await privateHost?.close();
  for (const host of otherPrivateHosts) await host.close();
  await publicHost?.close();
}, 60_000);

describe('a sandbox network namespace per app', () => {
  it('is served at its own namespace address, by the serving proxy and the health probes', async () => {
    const { address, port } = await instance();
    const subnet = stand.api.config.sandbox.subnet;
    expect(address).toMatch(/^10\./);
    expect(subnet.startsWith(address.split('.').slice(0, 2).join('.'))).toBe(true);
    // The app listens on its own 127.0.0.1; the host reaches it at the namespace's address.
    expect(await (await fetch(`http://${address}:${port}/ok`)).text()).toBe('ok');
    expect(await hostAnswer('127.0.0.1', port, 'GET /ok HTTP/1.0\r\n\r\n')).toBe('ECONNREFUSED');
    expect(await (await fetch(`${app.url}/ok`)).text()).toBe('ok');
  });

  it('lists no host socket in its /proc/net/tcp and tcp6', async () => {
    const { tcp, tcp6, port } = await ask('/sockets');
    const localPorts = (table: string) =>
      table
        .split('\n')
        .slice(1)
        .filter(Boolean)
        .map((l: string) => parseInt(l.trim().split(/\s+/)[1]!.split(':')[1]!, 16));
    const apiPort = Number(new URL(stand.apiUrl).port);
    // The host's table lists the api's socket; the app's lists only its own server's connections.
    expect(localPorts(readFileSync('/proc/net/tcp', 'utf8'))).toContain(apiPort);
    expect(new Set(localPorts(tcp))).toEqual(new Set([port]));
    expect(localPorts(tcp6)).toEqual([]);
  });

  it("binding the serving proxy's port or a front's port inside its namespace takes nothing from the host, " +
    'also across a deployer restart', async () => {
    const proxyPort = Number(new URL(app.url).port);
    const { postgres, redis } = await fronts();
    for (const port of [proxyPort, postgres, redis]) expect((await ask(`/bind?port=${port}`)).result).toBe('bound');
    const frontHost = (await ask('/env')).redis.split(':')[0];
    // The host's own listeners still answer, not the squatter.
    expect(await hostAnswer(frontHost, redis, 'PING\r\n')).toMatch(/^-/);
    expect(await (await fetch(`${app.url}/ok`)).text()).toBe('ok');

    const before = await instance();
    await stand.services.deployer.stop();
    // While no deployer runs, the ports are free on the host (the squatter holds them only inside).
    expect(await hostAnswer('127.0.0.1', proxyPort, 'x')).toBe('ECONNREFUSED');
    // A namespace whose instance is gone (a stop that never finished), for the next deployer to reap.
    const leftover = await leftoverNamespace();
    stand.services.deployer = await startService('deployer', serviceEnv(stand.api, standEnv()));
    await eventually(
      async () => (await fetch(`${app.url}/ok`).catch(() => null))?.status,
      (s) => s === 200,
      30_000,
      200,
    );
    expect(stand.services.deployer.output()).toMatch(/re-adopted a running instance/);
    expect(stand.services.deployer.output()).not.toMatch(/cannot listen on its recorded port/);
    expect(await hostAnswer(frontHost, redis, 'PING\r\n')).toMatch(/^-/);
    // The same process, at the same namespace address.
    expect(await instance()).toEqual(before);
    await eventually(
      async () => existsSync(leftover.nsPath),
      (exists) => !exists,
      10_000,
      200,
    );
    await eventually(
      () => stand.api.dataSource.query(`SELECT owner FROM sandbox_networks WHERE owner = $1`, [leftover.owner]),
      (rows) => rows.length === 0,
      10_000,
      200,
    );
    expect(existsSync(`/sys/class/net/slw${ipHex(leftover.address, -2)}`)).toBe(false);
  }, 90_000);

  it('reaches no store on another address: the host reaches the stand-in compose host, the sandbox does not', async () => {
    expect(await hostAnswer(privateHost.address, privateHost.port, '')).toBe('pong');
    expect((await ask(`/connect?host=${privateHost.address}&port=${privateHost.port}`)).result).toBe('timeout');
  });

  it('reaches no address of the host but its fronts, and its own namespace only through them', async () => {
    const { postgres, trace } = await fronts();
    const frontHost = (await ask('/env')).database.split(':')[0];
    expect(frontHost).toBe(stand.api.config.sandbox.subnet.replace(/\.0\/\d+$/, '.1'));
    // Its own front answers (asked again for a while: one probe's 2 s can pass unanswered on a loaded machine).
    const reached = await eventually(
      async () => (await ask(`/connect?host=${frontHost}&port=${postgres}`)).result as string,
      (r) => /^connected/.test(r),
      15_000,
      250,
    );
    expect(reached).toMatch(/^connected/);
    expect((await ask(`/connect?host=${frontHost}&port=${trace}`)).result).toMatch(/^connected/);
    const apiPort = Number(new URL(stand.apiUrl).port);
    const { address } = await instance();
    const gateway = address.replace(/\d+$/, (n) => String(Number(n) - 1));
    for (const host of [frontHost, gateway])
      expect((await ask(`/connect?host=${host}&port=${apiPort}`)).result).toBe('timeout');
    // 127.0.0.1 inside is the namespace's own loopback: the host's api is not there.
    expect((await ask(`/connect?host=127.0.0.1&port=${apiPort}`)).result).toBe('ECONNREFUSED');
  });

  it("reaches no service of the host on the host's own network address, one the host itself reaches", async (ctx) => {
    const own = nonLoopbackAddress();
    if (!own) return ctx.skip('this machine has no non-loopback IPv4 address');
    // A service of the host listening on every address, as a careless one would.
    const server = createServer((s) => s.end('host-service'));
    await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      expect(await hostAnswer(own, port, '')).toBe('host-service');
      expect((await ask(`/connect?host=${own}&port=${port}`)).result).toBe('timeout');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('reaches no RFC 1918, shared (CGNAT) or link-local address, though the host reaches each', async () => {
    for (const host of otherPrivateHosts) {
      expect(await hostAnswer(host.address, host.port, ''), host.address).toBe('pong');
      expect((await ask(`/connect?host=${host.address}&port=${host.port}`)).result, host.address).toBe('timeout');
    }
  });

  it("reaches neither another sandbox nor another deployment's fronts", async () => {
    const other = await instance(neighbour.deploymentId);
    expect(await (await fetch(`http://${other.address}:${other.port}/ok`)).text()).toBe('ok');
    expect((await ask(`/connect?host=${other.address}&port=${other.port}`)).result).toBe('timeout');
    const theirs = await fronts(neighbour.deploymentId);
    const frontHost = (await ask('/env')).database.split(':')[0];
    expect((await ask(`/connect?host=${frontHost}&port=${theirs.postgres}`)).result).toBe('timeout');
    expect((await ask(`/connect?host=${frontHost}&port=${theirs.redis}`)).result).toBe('timeout');
    // Nor its trace front: a sandbox's traces reach only its own deployment's project.
    expect((await ask(`/connect?host=${frontHost}&port=${theirs.trace}`)).result).toBe('timeout');
  });

  it('reaches an allow-listed public-shaped address', async () => {
    expect((await ask(`/connect?host=${publicHost.address}&port=${publicHost.port}`)).result).toBe('connected:pong');
  });

  it("removes an instance's namespace, veth and address when it stops (its deployment is deleted)", async () => {
    stand.commit('doomed', nodeApp('doomed', NETNS_PROBE_SERVER));
    const d = await stand.deploy('doomed');
    expect((await stand.untilDone(d.deploymentId, d.revisionId)).status).toBe('DEPLOYED');
    const gone = await instance(d.deploymentId);
    const nsPath = `/run/netns/slipway-${ipHex(gone.address, -2)}`;
    expect(existsSync(nsPath)).toBe(true);
    expect(existsSync(`/sys/class/net/slw${ipHex(gone.address, -2)}`)).toBe(true);
    expect((await stand.http.delete(`/v2/deployments/${d.deploymentId}`)).status).toBe(204);
    await eventually(
      async () => existsSync(nsPath),
      (exists) => !exists,
      60_000,
      300,
    );
    expect(existsSync(`/sys/class/net/slw${ipHex(gone.address, -2)}`)).toBe(false);
    // The address is given back after the links are gone.
    const held = async () =>
      (await stand.api.dataSource.query(`SELECT host(address) AS address FROM sandbox_networks`)).map(
        (h: { address: string }) => h.address,
      );
    await eventually(held, (addresses) => !addresses.includes(gone.address), 10_000, 200);
  }, 180_000);

  it('a starting builder removes the namespace of a build that no longer runs (its builder died)', async () => {
    await stand.services.builder.stop();
    const leftover = await leftoverNamespace(`b-${randomUUID()}-a1`);
    stand.services.builder = await startService('builder', serviceEnv(stand.api, standEnv()));
    await eventually(
      async () => existsSync(leftover.nsPath),
      (exists) => !exists,
      20_000,
      200,
    );
    expect(existsSync(`/sys/class/net/slw${ipHex(leftover.address, -2)}`)).toBe(false);
    await eventually(
      () => stand.api.dataSource.query(`SELECT owner FROM sandbox_networks WHERE owner = $1`, [leftover.owner]),
      (rows) => rows.length === 0,
      10_000,
      200,
    );
    expect(stand.services.builder.output()).toMatch(/removed network namespaces left by interrupted builds/);
  }, 60_000);

  it("runs a build's npm install against the public registry from the build's own namespace", async () => {
    const build = await stand.logLines(neighbour.deploymentId, neighbour.revisionId, 'build');
    expect(build.join('\n')).toMatch(/added 1 package/);
    // Its serving proxy was opened again by the deployer restarted above (once seen refused in CI, not
    // reproduced): should it not answer, the deployer's own words say why.
    const answer = await fetch(`${neighbour.url}/dependency`).catch((err: Error) => {
      throw new Error(
        `${err.message} (${neighbour.url}); the deployer said:\n${stand.services.deployer.output().slice(-6000)}`,
      );
    });
    expect(await answer.json()).toEqual({ isNumber: true });
    // Finished builds leave no namespace behind.
    const held = await stand.api.dataSource.query(`SELECT owner FROM sandbox_networks`);
    expect(held.filter((h: { owner: string }) => h.owner.startsWith('b-'))).toEqual([]);
    expect(held.length).toBeGreaterThanOrEqual(2);
  });

  it('resolves names through the DNS relay on its gateway', async () => {
    const { address } = await instance();
    const gateway = address.replace(/\d+$/, (n) => String(Number(n) - 1));
    expect(readFileSync(`/etc/netns/slipway-${ipHex(address, -2)}/resolv.conf`, 'utf8')).toBe(
      `nameserver ${gateway}\n`,
    );
    expect((await ask('/resolve?name=localhost')).address).toBe('127.0.0.1');
    const resolved = await ask('/resolve?name=registry.npmjs.org');
    expect(resolved.address, JSON.stringify(resolved)).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
  });
});

/** A namespace held by an instance id no row knows (attached with the runtime's own layer). */
async function leftoverNamespace(
  owner = `i-${randomUUID()}`,
): Promise<{ owner: string; nsPath: string; address: string }> {
  const network = new SandboxNetwork(stand.api.dataSource, stand.api.config.sandbox.subnet, {
    allowCidrs: [],
    storeAddresses: [],
  });
  const attached = await network.attach(owner);
  await network.close();
  expect(existsSync(attached.nsPath)).toBe(true);
  expect(existsSync(`/sys/class/net/slw${ipHex(attached.address, -2)}`)).toBe(true);
  return { owner, nsPath: attached.nsPath, address: attached.address };
}

function standEnv(): Record<string, string> {
  const { runtime } = stand.api.config;
  return {
    SLIPWAY_RUNTIME_PORT_MIN: String(runtime.portMin),
    SLIPWAY_RUNTIME_PORT_MAX: String(runtime.portMax),
    SLIPWAY_ROLLOUT_DEADLINE_MS: '90000',
  };
}

/** The 8 hex digits of `address` + `delta` (namespace names). */
function ipHex(address: string, delta: number): string {
  const n = address.split('.').reduce((acc, p) => acc * 256 + Number(p), 0) + delta;
  return n.toString(16).padStart(8, '0');
}
