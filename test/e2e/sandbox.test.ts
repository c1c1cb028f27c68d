import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploymentDatabaseName } from '@slipway/domain';
import { isProcessAlive } from '@slipway/runtime';
import { keepProbing, nodeApp, startCodeDeployStand, type CodeDeployStand } from '../support/code-deploy-stand.js';
import { hostileAppFiles } from '../support/hostile-app.js';

/**
 * Issue 7's hostile app, through the real api, builder and deployer processes with the sandbox
 * on (the harness runs as root with bubblewrap, cgroups and nftables): its build step and its
 * server each try everything an app must not do and report what they got; every attempt is
 * asserted separately, for both, while a well-behaved deployment keeps answering and the api
 * stays ready.
 */
const PIDS_MAX = 128;
const OPEN_FILES = 2048;
const MEMORY_MB = 192;
const BUILD_MEMORY_MB = 256;

let stand: CodeDeployStand;
let friendly: { deploymentId: string; revisionId: string; url: string; pid: number };
let hostile: { deploymentId: string; revisionId: string; url: string };
/** What the control plane must never hand an app. */
let crown: { databaseUrl: string; redisUrl: string; secretsKey: string };

const FRIENDLY_SERVER =
  `require('node:http').createServer((req, res) => ` +
  `res.end('friendly')).listen(Number(process.env.PORT), '127.0.0.1');\n`;

/** The builder's and deployer's last warnings and errors: why a deploy failed, beside its status_message. */
const lastProblems = () =>
  [stand.services.builder, stand.services.deployer]
    .flatMap((s) =>
      s
        .output()
        .split('\n')
        .filter((line) => /"level":\s*("(warn|error|fatal)"|[456]0)/.test(line))
        .slice(-10),
    )
    .join('\n');

beforeAll(async () => {
  stand = await startCodeDeployStand({
    SLIPWAY_SANDBOX_PIDS_MAX: String(PIDS_MAX),
    SLIPWAY_SANDBOX_OPEN_FILES: String(OPEN_FILES),
    SLIPWAY_BUILD_PIDS_MAX: String(PIDS_MAX),
    SLIPWAY_BUILD_MEMORY_MB: String(BUILD_MEMORY_MB),
  });
  const { api } = stand;
  crown = {
    databaseUrl: api.database.url,
    redisUrl: api.config.redisUrl,
    secretsKey: api.config.secretsKey.key.toString('base64'),
  };
  // What a development install keeps in its data dir: canaries the app must not read.
  for (const [file, text] of [
    ['secrets.key', crown.secretsKey],
    ['bootstrap-api-key', api.adminKey],
  ]) {
    const at = path.join(api.config.dataDir, file!);
    if (!existsSync(at)) writeFileSync(at, text!, { mode: 0o600 });
  }

  stand.commit('friendly', nodeApp('friendly', FRIENDLY_SERVER));

  const f = await stand.deploy('friendly');
  const fRev = await stand.untilDone(f.deploymentId, f.revisionId);
  expect(fRev.status, `${fRev.status_message}\n${lastProblems()}`).toBe('DEPLOYED');
  const [proc] = await api.dataSource.query(
    `SELECT pid FROM runtime_processes WHERE deployment_id = $1 AND status = 'running'`,
    [f.deploymentId],
  );
  friendly = { ...f, url: (await stand.http.get(`/v2/deployments/${f.deploymentId}`)).body.url, pid: Number(proc.pid) };

  // Never run the hostile app unconfined (it would reach this machine's shared Postgres and Redis).
  for (const service of [stand.services.builder, stand.services.deployer])
    expect(service.output()).not.toMatch(/UNSANDBOXED|sandbox is unavailable/i);
  const dbUrl = new URL(api.database.url);
  stand.commit(
    'hostile',
    hostileAppFiles({
      dataDir: api.config.dataDir,
      otherPid: friendly.pid,
      otherArtifact: path.join(api.config.dataDir, 'artifacts', f.revisionId),
      otherDb: deploymentDatabaseName('friendly', f.deploymentId),
      controlDb: dbUrl.pathname.slice(1),
      superuser: decodeURIComponent(dbUrl.username) || 'postgres',
      workerPids: [
        stand.services.api.child.pid!,
        stand.services.builder.child.pid!,
        stand.services.deployer.child.pid!,
        process.pid,
      ],
      memoryMb: MEMORY_MB,
      buildMemoryMb: BUILD_MEMORY_MB,
    }),
  );
  const h = await stand.deploy('hostile', { resourceSpec: { memory_mb: MEMORY_MB, cpu: 1 } });
  const hRev = await stand.untilDone(h.deploymentId, h.revisionId);
  expect(hRev.status, `${hRev.status_message}\n${lastProblems()}`).toBe('DEPLOYED');
  hostile = { ...h, url: (await stand.http.get(`/v2/deployments/${h.deploymentId}`)).body.url };
}, 600_000);

afterAll(async () => {
  await stand?.close();
}, 60_000);

type Attempt = { ok: boolean; error?: string; value?: unknown };
type Run = { code: number | string; signal: string | null; out: string };

const reports: { build?: Record<string, any>; server?: Record<string, any> } = {};

describe('a hostile app in the process runtime sandbox', () => {
  it('runs its attack while the friendly deployment keeps answering and /readyz stays 200', async () => {
    const friendlyProbe = keepProbing(friendly.url);
    // /readyz is never rate limited, however long the attack runs and however often it is probed.
    const readyProbe = keepProbing(`${stand.apiUrl}/readyz`, 200);
    const res = await fetch(`${hostile.url}/attack`, { signal: AbortSignal.timeout(300_000) });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    reports.server = JSON.parse(text);
    // A while longer: the aftermath (killed children, OOM accounting) must not hurt anyone either.
    await new Promise((r) => setTimeout(r, 2_000));
    const friendlyDuring = await friendlyProbe.stop();
    const readyDuring = await readyProbe.stop();
    expect(friendlyDuring.requests).toBeGreaterThan(10);
    expect(friendlyDuring.failures).toEqual([]);
    expect(readyDuring.requests).toBeGreaterThan(10);
    expect(readyDuring.failures).toEqual([]);
    // The build step's report (its attempts ran while the friendly deployment was serving too).
    const build = await fetch(`${hostile.url}/build-report`);
    expect(build.status).toBe(200);
    reports.build = (await build.json()) as Record<string, any>;
  }, 320_000);

  describe.each([
    ['build step', 'build', BUILD_MEMORY_MB],
    ['server', 'server', MEMORY_MB],
  ] as const)('its %s', (_, which, memoryMb) => {
    const report = () => reports[which]!;

    it('runs as its own unprivileged uid with an environment built from scratch', () => {
      expect(report().uid).toBeGreaterThanOrEqual(stand.api.config.sandbox.uidMin);
      expect(report().uid).toBeLessThanOrEqual(stand.api.config.sandbox.uidMax);
      for (const name of ['DATABASE_URL', 'REDIS_URL', 'SLIPWAY_SECRETS_KEY', 'SLIPWAY_BOOTSTRAP_API_KEY'])
        expect(report().env).not.toHaveProperty(name);
    });

    it('runs with the open-files limit', () => {
      expect((report().limits as Attempt).value).toMatch(
        new RegExp(`Max open files\\s+${OPEN_FILES}\\s+${OPEN_FILES}\\s`),
      );
    });

    it('cannot read /proc/1/environ', () => {
      const got = report().proc1Environ as Attempt;
      expect(got.ok, JSON.stringify(got)).toBe(false);
    });

    it("sees no host path in PID 1's command line (bubblewrap's reaper) and no /sys/devices/virtual/powercap", () => {
      const cmdline = report().proc1Cmdline as Attempt;
      expect(cmdline.ok, JSON.stringify(cmdline)).toBe(true);
      expect(cmdline.value).toMatch(/^bwrap --args 4 -- prlimit /);
      expect(cmdline.value).not.toContain(stand.api.config.dataDir);
      expect((report().powercap as Attempt).ok).toBe(false);
    });

    it("sees only its own processes in /proc and no worker's environment", () => {
      const scan = report().procScan as { pids: number[] };
      // A PID namespace of its own: a handful of processes (bubblewrap's init, npm, sh, node).
      expect(scan.pids.length).toBeLessThan(20);
      const workers = Object.entries(report().workerEnvirons as Record<string, Attempt>);
      expect(workers).toHaveLength(4);
      for (const [pid, got] of workers)
        expect(got.ok, `worker pid ${pid}: ${JSON.stringify(got).slice(0, 200)}`).toBe(false);
    });

    it("cannot read the data dir's secrets.key or bootstrap key", () => {
      expect((report().secretsKey as Attempt).ok).toBe(false);
      expect((report().bootstrapKey as Attempt).ok).toBe(false);
    });

    it("cannot list the data dir, another deployment's artifact, builds or runtime files", () => {
      const listings = Object.entries(report().listings as Record<string, Attempt>);
      expect(listings).toHaveLength(5);
      for (const [dir, got] of listings) expect(got.ok, `${dir}: ${JSON.stringify(got)}`).toBe(false);
    });

    it('cannot kill -9 a process of another deployment', () => {
      expect((report().killOther as Attempt).ok).toBe(false);
      expect(isProcessAlive(friendly.pid)).toBe(true);
    });

    it('cannot reach Redis directly on 127.0.0.1:6379 (PING, DBSIZE)', () => {
      for (const name of ['redisDirect', 'redisDirectDbSize']) {
        const got = report()[name] as Run;
        expect(got.out, name).not.toMatch(/PONG|^\(integer\)|^\d+$/m);
        expect(got.code, name).not.toBe(0);
      }
    });

    it("cannot reach Postgres directly on 127.0.0.1:5432 as the superuser (control plane's or another deployment's database)", () => {
      for (const name of ['pgSuperuserDirect', 'pgOtherDirect']) {
        const got = report()[name] as Run;
        expect(got.code, `${name}: ${got.out}`).not.toBe(0);
      }
    });

    it('runs under the seccomp filter, with no capabilities at all and no_new_privs', () => {
      const kernel = report().kernel as Record<string, Attempt>;
      expect(kernel.seccompStatus.value).toBe('Seccomp:\t2');
      const zero = '0000000000000000';
      expect(kernel.privileges.value).toEqual([
        `CapInh:\t${zero}`,
        `CapPrm:\t${zero}`,
        `CapEff:\t${zero}`,
        `CapBnd:\t${zero}`,
        `CapAmb:\t${zero}`,
        'NoNewPrivs:\t1',
      ]);
    });

    it('cannot create a user namespace (unshare -U, unshare -Ur)', () => {
      const kernel = report().kernel as Record<string, Run>;
      for (const name of ['unshareUser', 'unshareUserRoot']) {
        expect(kernel[name].code, `${name}: ${kernel[name].out}`).not.toBe(0);
        expect(kernel[name].out, name).toMatch(/Operation not permitted/);
      }
    });

    it('cannot create a network namespace, mount, ptrace its own child or use the keyring (each EPERM)', () => {
      const kernel = report().kernel as Record<string, Run>;
      expect(kernel.unshareNet.code, kernel.unshareNet.out).not.toBe(0);
      expect(kernel.unshareNet.out).toMatch(/Operation not permitted/);
      for (const name of ['mount', 'ptraceChild', 'keyctl']) expect(kernel[name].out, name).toBe('1');
    });

    it('has its fork bomb stopped at the pids limit', () => {
      const bomb = report().forkBomb as { peakProcesses: number };
      // It did fork (so the limit, not a broken bomb, stopped it)…
      expect(bomb.peakProcesses).toBeGreaterThan(PIDS_MAX / 4);
      // …and never beyond the pids limit (threads count against it too).
      expect(bomb.peakProcesses).toBeLessThanOrEqual(PIDS_MAX);
    });

    it('has the child allocating twice its memory killed at the memory limit, while it lives on', () => {
      const memory = report().memory as { signal: string | null; reachedMb: number; done: boolean };
      expect(memory.done, JSON.stringify(memory)).toBe(false);
      expect(memory.signal, JSON.stringify(memory)).toBe('SIGKILL');
      // It did allocate (so the limit, not a broken child, stopped it), and never twice its memory.
      expect(memory.reachedMb).toBeGreaterThanOrEqual(16);
      expect(memory.reachedMb).toBeLessThan(2 * memoryMb);
      expect(report().stillAlive).toBe(true);
    });
  });

  describe('its server, with its own store credentials', () => {
    const report = () => reports.server!;

    it('reaches only its own Redis keys: FLUSHALL, CONFIG GET * and foreign keys are denied', () => {
      expect((report().redisOwnKey as Run).out).toBe('OK');
      for (const name of ['redisFlushAll', 'redisConfigGet', 'redisOtherKey']) {
        const got = report()[name] as Run;
        expect(got.out, name).toMatch(/NOPERM|no permissions/i);
      }
    });

    it("connects to its own database, and to neither the control plane's nor another deployment's", () => {
      expect((report().pgOwn as Run).code, (report().pgOwn as Run).out).toBe(0);
      for (const name of ['pgControlPlane', 'pgOtherDeployment', 'pgSuperuserThroughFront']) {
        const got = report()[name] as Run;
        expect(got.code, `${name}: ${got.out}`).not.toBe(0);
      }
    });

    it('still answers after everything', async () => {
      expect((await fetch(`${hostile.url}/ok`)).status).toBe(200);
    });
  });

  it("never sees or logs the control plane's DATABASE_URL, REDIS_URL or secrets key", async () => {
    const reported = JSON.stringify(reports);
    const buildLog = (await stand.logLines(hostile.deploymentId, hostile.revisionId, 'build')).join('\n');
    const deployLog = (await stand.logLines(hostile.deploymentId, hostile.revisionId, 'deploy')).join('\n');
    expect(buildLog).toContain('hostile build attempts done');
    expect(deployLog).toContain('hostile app listening');
    for (const [what, value] of Object.entries(crown)) {
      expect(reported.includes(value), `${what} in a report`).toBe(false);
      expect(buildLog.includes(value), `${what} in the build log`).toBe(false);
      expect(deployLog.includes(value), `${what} in the deploy log`).toBe(false);
    }
  });
});
