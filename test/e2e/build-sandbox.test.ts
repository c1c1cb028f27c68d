import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalIntegration, initRepo, integrationRoot } from '../support/git-fixtures.js';
import { eventually, serviceEnv, startService, type ServiceProcess } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * The real builder process with the sandbox on (the tests run as root, with bubblewrap, cgroups
 * and nftables): a build step runs as its deployment's uid and can reach nothing of the control
 * plane's — its environment, its key files, other deployments' build directories and
 * artifacts — and a build past its disk quota or memory limit fails saying so.
 */

const BUILD_TIMEOUT_MS = 90_000;
const DISK_MB = 16;
const MEMORY_MB = 256;

const sandboxed = process.getuid?.() === 0;

let api: TestApi;
let builder: ServiceProcess;
let integrationId: string;
let repoUrl: string;
const OTHER_MARKER = `other-deployment-marker-${randomBytes(6).toString('hex')}`;
const KEY_FILE_TEXT = `control-plane-key-file-${randomBytes(6).toString('hex')}`;

/**
 * Tries each thing a hostile build would, printing `<attempt>: <what it got>` per line. The
 * targets come in through secrets (so they are masked in the log, which is fine: what matters
 * is what the attempt got).
 */
const PROBE =
  `#!/bin/sh
try() { printf '%s: %s\\n' "$1" "$(sh -c "$2" 2>&1 | tr '\\n\\000' '  ' | cut -c1-400)"; }
echo "identity: uid=$(id -u) groups=$(id -G)"
try builder-environ 'cat /proc/$PROBE_BUILDER_PID/environ'
try init-environ 'cat /proc/1/environ'
try every-environ 'for f in /proc/[0-9]*/environ; do cat $f; echo; done'
try process-count 'ls /proc | grep -c "^[0-9]"'
try secrets-key 'cat $PROBE_DATA_DIR/secrets.key'
try bootstrap-key 'cat $PROBE_DATA_DIR/bootstrap-api-key'
try data-dir 'ls $PROBE_DATA_DIR'
try other-build-dir 'ls $PROBE_OTHER_BUILD'
try other-build-file 'cat $PROBE_OTHER_BUILD/source/marker.txt'
try other-artifact 'cat $PROBE_OTHER_ARTIFACT/app/package.json'
try unshare-user 'unshare -U id -u'
try postgres 'node -e "const s=require(\\"net\\").connect(5432,\\"127.0.0.1\\");` +
  `s.on(\\"connect\\",()=>{console.log(\\"connected\\");process.exit(0)});` +
  `s.on(\\"error\\",(e)=>{console.log(e.code);process.exit(0)});` +
  `setTimeout(()=>{console.log(\\"timeout\\");process.exit(0)},3000)"'
`;

const FILES: Record<string, string> = {
  'package.json': JSON.stringify({
    name: 'sandboxed-agent',
    version: '1.0.0',
    private: true,
    scripts: { build: 'node build.js', start: 'node dist/server.js' },
  }),
  'build.js': "require('fs').mkdirSync('dist',{recursive:true});require('fs').writeFileSync('dist/server.js','');\n",
  'langgraph.json': JSON.stringify({ node_version: '20', graphs: { agent: './dist/graph.js:graph' } }),
  'probe.sh': PROBE,
};

async function createBuild(name: string, buildCommand: string, secrets: Array<{ name: string; value: string }> = []) {
  const res = await api.http.post('/v2/deployments', {
    name,
    source: 'repohost',
    source_config: { integration_id: integrationId, repo_url: repoUrl, build_command: buildCommand },
    source_revision_config: { repo_ref: 'main' },
    secrets,
  });
  expect(res.status, res.text).toBe(201);
  return { deploymentId: res.body.id as string, revisionId: res.body.latest_revision_id as string };
}

const revisionRow = async (id: string) =>
  (await api.dataSource.query(`SELECT status, status_message FROM revisions WHERE id = $1`, [id]))[0];

const settle = (id: string) =>
  eventually(
    () => revisionRow(id),
    (r) => ['AWAITING_DEPLOY', 'BUILD_FAILED', 'INTERRUPTED'].includes(r.status),
    BUILD_TIMEOUT_MS,
    200,
  );

const buildLogs = async (id: string): Promise<string[]> =>
  (
    await api.dataSource.query(
      `SELECT message FROM revision_logs WHERE revision_id = $1 AND type = 'build' ORDER BY id`,
      [id],
    )
  ).map((r: { message: string }) => r.message);

const sandboxUid = async (deploymentId: string): Promise<number> =>
  Number(
    (await api.dataSource.query(`SELECT sandbox_uid FROM deployments WHERE id = $1`, [deploymentId]))[0].sandbox_uid,
  );

/** The line `<attempt>: …` the probe printed. */
const attempt = (logs: string[], name: string): string => {
  const line = logs.find((l) => l.startsWith(`${name}: `));
  expect(line, `the probe reported ${name}`).toBeDefined();
  return line!.slice(name.length + 2);
};

beforeAll(async () => {
  api = await startTestApi();
  api.relay.start();
  const reposRoot = integrationRoot(api, 'sandbox-repos');
  repoUrl = (await initRepo(path.join(reposRoot, 'sandboxed-agent'), { files: FILES })).url;
  integrationId = (await createLocalIntegration(api, 'sandbox-repos', reposRoot)).id;
  // What a development installation keeps in its data dir: the probe tries to read them.
  writeFileSync(path.join(api.config.dataDir, 'secrets.key'), `${KEY_FILE_TEXT}\n`, { mode: 0o600 });
  writeFileSync(path.join(api.config.dataDir, 'bootstrap-api-key'), `${KEY_FILE_TEXT}\n`, { mode: 0o600 });
  builder = await startService(
    'builder',
    serviceEnv(api, {
      SLIPWAY_RECONCILE_INTERVAL_MS: '3600000',
      SLIPWAY_BUILD_DISK_MB: String(DISK_MB),
      SLIPWAY_BUILD_MEMORY_MB: String(MEMORY_MB),
      SLIPWAY_BUILDER_CONCURRENCY: '2',
    }),
  );
}, 60_000);

afterAll(async () => {
  await builder?.stop();
  await api?.close();
});

describe.skipIf(!sandboxed)('build sandbox', () => {
  let built: { deploymentId: string; revisionId: string };

  it('builds as the deployment uid: its artifact is that uid’s, the control plane’s directories stay 0700', async () => {
    built = await createBuild('sandboxed-build', 'echo "uid=$(id -u)"; npm run build');
    const row = await settle(built.revisionId);
    expect(row.status, row.status_message).toBe('AWAITING_DEPLOY');
    const uid = await sandboxUid(built.deploymentId);
    expect(uid).toBeGreaterThanOrEqual(api.config.sandbox.uidMin);
    expect(uid).toBeLessThanOrEqual(api.config.sandbox.uidMax);
    expect(await buildLogs(built.revisionId)).toContain(`uid=${uid}`);

    const artifact = path.join(api.config.dataDir, 'artifacts', built.revisionId);
    expect(statSync(artifact).uid).toBe(uid);
    expect(statSync(artifact).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(artifact, 'app/dist/server.js')).uid).toBe(uid);
    expect(statSync(path.join(api.config.dataDir, 'cache', 'npm', built.deploymentId)).uid).toBe(uid);
    for (const dir of ['', 'artifacts', 'builds', 'cache']) {
      const info = statSync(path.join(api.config.dataDir, dir));
      expect({ dir, uid: info.uid, mode: info.mode & 0o777 }).toEqual({ dir, uid: process.getuid!(), mode: 0o700 });
    }
  });

  it('a build step reads nothing of the control plane or of another deployment', async () => {
    // Another deployment's build, still running (its directory exists) while the probe runs.
    const other = await createBuild('other-build', `echo ${OTHER_MARKER} > marker.txt; echo other-ready; sleep 120`);
    await eventually(
      () => buildLogs(other.revisionId),
      (lines) => lines.includes('other-ready'),
      BUILD_TIMEOUT_MS,
      200,
    );
    const otherBuild = path.join(api.config.dataDir, 'builds', `${other.revisionId}-a0`);
    expect(statSync(otherBuild).uid).toBe(await sandboxUid(other.deploymentId));

    const probe = await createBuild('hostile-build', 'sh probe.sh; npm run build', [
      { name: 'PROBE_BUILDER_PID', value: String(builder.child.pid) },
      { name: 'PROBE_DATA_DIR', value: api.config.dataDir },
      { name: 'PROBE_OTHER_BUILD', value: otherBuild },
      { name: 'PROBE_OTHER_ARTIFACT', value: path.join(api.config.dataDir, 'artifacts', built.revisionId) },
    ]);
    const row = await settle(probe.revisionId);
    expect(row.status, row.status_message).toBe('AWAITING_DEPLOY');
    const logs = await buildLogs(probe.revisionId);
    const uid = await sandboxUid(probe.deploymentId);

    expect(attempt(logs, 'identity')).toBe(`uid=${uid} groups=${uid}`);
    // The builder is not even in the step's PID namespace; its pid 1 is the sandbox's, not readable.
    expect(attempt(logs, 'builder-environ')).toMatch(/No such file or directory/);
    expect(attempt(logs, 'init-environ')).toMatch(/Permission denied/);
    expect(Number(attempt(logs, 'process-count'))).toBeLessThan(20);
    for (const name of [
      'secrets-key',
      'bootstrap-key',
      'data-dir',
      'other-build-dir',
      'other-build-file',
      'other-artifact',
    ]) {
      expect(attempt(logs, name), name).toMatch(/No such file or directory/);
    }
    // The seccomp filter: no user namespace (the kernel would allow one to any uid otherwise).
    expect(attempt(logs, 'unshare-user')).toMatch(/unshare failed: Operation not permitted/);
    expect(attempt(logs, 'postgres')).toMatch(/^(timeout|ECONNREFUSED|EPERM|EACCES)/);

    // Nothing of the control plane's appears in anything the step printed.
    const everything = logs.join('\n') + (row.status_message ?? '');
    for (const value of [
      api.database.url,
      api.config.redisUrl,
      api.config.secretsKey.key.toString('base64'),
      KEY_FILE_TEXT,
      OTHER_MARKER,
    ]) {
      expect(everything).not.toContain(value);
    }
    expect(everything).not.toMatch(/DATABASE_URL=|REDIS_URL=|SLIPWAY_SECRETS_KEY=/);

    const stop = await api.http.post(
      `/v2/deployments/${other.deploymentId}/revisions/${other.revisionId}/interruption`,
    );
    expect(stop.status, stop.text).toBe(200);
  });

  it('fails a build whose directory grew past the disk quota after a step, saying so', async () => {
    const command = 'head -c 40000000 /dev/zero > big.bin';
    const { revisionId } = await createBuild('quota-after', command);
    const row = await settle(revisionId);
    expect(row.status).toBe('BUILD_FAILED');
    expect(row.status_message).toMatch(
      new RegExp(
        `^The build exceeded its disk quota of ${DISK_MB} MB \\(SLIPWAY_BUILD_DISK_MB\\): its build directory ` +
          `and npm cache held \\d+ MB after the build command \`${command}\`\\.`,
      ),
    );
  });

  it('stops a step that keeps writing once it passes the disk quota', async () => {
    const command = 'while true; do head -c 1000000 /dev/zero >> big.bin; sleep 0.05; done';
    const { revisionId } = await createBuild('quota-during', command);
    const row = await settle(revisionId);
    expect(row.status).toBe('BUILD_FAILED');
    expect(row.status_message).toMatch(
      new RegExp(
        String.raw`^The build exceeded its disk quota of 16 MB \(SLIPWAY_BUILD_DISK_MB\): its build directory and ` +
          String.raw`npm cache held \d+ MB while the build command ` +
          '`while true;',
      ),
    );
  });

  it('fails a step killed by its memory limit, naming the limit', async () => {
    const command = `node -e "const a = []; for (;;) a.push(Buffer.alloc(8e6, 1))"`;
    const { revisionId } = await createBuild('memory-hog', command);
    const row = await settle(revisionId);
    expect(row.status).toBe('BUILD_FAILED');
    expect(row.status_message).toContain(
      `The build command \`${command}\` was killed: out of memory (limit ${MEMORY_MB} MB).`,
    );
  });
});

describe('builder start policy', () => {
  /** A PATH with git and sh but no bubblewrap: the sandbox cannot be set up. */
  function pathWithoutBwrap(): { dir: string; remove: () => void } {
    const dir = mkdtempSync(path.join(tmpdir(), 'slipway-no-bwrap-'));
    for (const tool of ['sh', 'git', 'setpriv', 'prlimit', 'nft', 'du', 'chown'])
      symlinkSync(`/usr/bin/${tool}`, path.join(dir, tool));
    return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
  }

  it('in production, refuses to start when the sandbox cannot be set up, saying what is missing and how to opt out', async () => {
    const bin = pathWithoutBwrap();
    try {
      const start = startService('builder', serviceEnv(api, { NODE_ENV: 'production', PATH: bin.dir }), 20_000);
      const err = await start.then(
        () => null,
        (e: Error) => e,
      );
      expect(err?.message).toMatch(/builder exited before printing/);
      expect(err?.message).toMatch(
        /Refusing to start in production without the sandbox: ('bwrap' is not installed|the sandbox needs root)/,
      );
      expect(err?.message).toContain('set SLIPWAY_SANDBOX=off to run unsandboxed (unsafe)');
    } finally {
      bin.remove();
    }
  });

  it('with SLIPWAY_SANDBOX=off, starts in production and warns that user code runs unsandboxed', async () => {
    const bin = pathWithoutBwrap();
    let optedOut: ServiceProcess | undefined;
    try {
      optedOut = await startService(
        'builder',
        serviceEnv(api, { NODE_ENV: 'production', PATH: bin.dir, SLIPWAY_SANDBOX: 'off' }),
      );
      expect(optedOut.output()).toMatch(/"level":"warn".*SLIPWAY_SANDBOX=off\. USER CODE RUNS UNSANDBOXED/);
    } finally {
      await optedOut?.stop();
      bin.remove();
    }
  });
});
