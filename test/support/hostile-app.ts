/**
 * A hostile app (CommonJS, no dependencies) for the sandbox e2e test. Its BUILD step
 * (`npm run build`: build-attack.js) and its SERVER (`GET /attack`) each try everything an app must
 * not be able to do and report what they got as JSON: the build's report ships in the artifact
 * (`GET /build-report`). `/ok` is the health probe. What the attacks aim at comes from
 * `targets.json`, written by the test (an attacker who knows the layout).
 *
 * Every attempt that talks to Postgres or Redis through the app's own credentials has a positive
 * control (its own database and key prefix must work), so "it failed" never just means "the
 * client is broken".
 */
export interface HostileTargets {
  dataDir: string;
  /** A process of another deployment. */
  otherPid: number;
  /** Another deployment's artifact directory. */
  otherArtifact: string;
  /** Another deployment's database. */
  otherDb: string;
  /** The control plane's database and its (super)user. */
  controlDb: string;
  superuser: string;
  /** The api's and workers' pids. */
  workerPids: number[];
  /** The app's and the build's memory limits. */
  memoryMb: number;
  buildMemoryMb: number;
}

export function hostileAppFiles(targets: HostileTargets): Record<string, string> {
  return {
    'package.json': JSON.stringify({
      name: 'hostile',
      version: '1.0.0',
      private: true,
      scripts: { build: 'node build-attack.js', start: 'node server.js' },
    }),
    'langgraph.json': JSON.stringify({
      node_version: '20',
      graphs: { agent: './server.js:graph' },
      dependencies: ['.'],
    }),
    'targets.json': JSON.stringify(targets),
    'attacks.js': ATTACKS,
    'build-attack.js': BUILD,
    'server.js': SERVER,
  };
}

const ATTACKS = String.raw`
const fs = require('node:fs');
const { execFile, spawn } = require('node:child_process');

const env = process.env;
/** What the attacks aim at (an attacker who knows the layout), written by the test. */
const targets = require('./targets.json');
// libuv's thread pool starts now, not when the fork bomb has used up every pid.
fs.readFile('/proc/self/stat', () => undefined);

/** A command's outcome, never throwing: exit code, signal and (trimmed) output. */
function run(command, args, options = {}) {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: 15000, env: { ...env, ...options.env }, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      resolve({
        code: err ? (typeof err.code === 'number' ? err.code : String(err.code)) : 0,
        signal: err && err.signal ? err.signal : null,
        out: (String(stdout) + String(stderr)).trim().slice(0, 2000),
      });
    });
  });
}

function attempt(fn) {
  try {
    return { ok: true, value: fn() };
  } catch (err) {
    return { ok: false, error: String(err && err.code ? err.code : err) };
  }
}

const psql = (conninfo, sql) => run('psql', ['-w', '-X', '-A', '-t', '-d', conninfo, '-c', sql], { env: { PGCONNECT_TIMEOUT: '5' } });
const redis = (args) => run('timeout', ['8', 'redis-cli', '--no-auth-warning', ...args]);

function withDatabase(uri, database) {
  const u = new URL(uri);
  u.pathname = '/' + database;
  return u.toString();
}

function asUser(uri, user) {
  const u = new URL(uri);
  u.username = user;
  u.password = '';
  return u.toString();
}

/** Every process this app can see in /proc, and whose environment it could read. */
function scanProc() {
  const pids = fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e)).map(Number);
  const environs = {};
  for (const pid of pids) environs[pid] = attempt(() => fs.readFileSync('/proc/' + pid + '/environ', 'utf8').split('\0').filter(Boolean));
  return { pids, environs };
}

/** Allocates (and touches) memory in a child until it has twice MEMORY_MB or dies. */
function hog(mb) {
  const script =
    'const a=[];let n=0;for(;;){const b=Buffer.alloc(16<<20);b.fill(1);a.push(b);n+=16;' +
    'process.stdout.write(n+"\\n");if(n>=' + mb + ')break;}console.log("done")';
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code, signal) => {
      const lines = out.trim().split('\n');
      resolve({
        code,
        signal,
        reachedMb: Number(lines.filter((l) => /^\d+$/.test(l)).pop() || 0),
        done: lines.includes('done'),
        stderr: err.slice(0, 500),
      });
    });
  });
}

/** Forks as fast as it can for a few seconds, counts the processes it reached, kills them all. */
function forkBomb() {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', 'while :; do sleep 60 & done'], { detached: true, stdio: 'ignore' });
    let peak = 0;
    const count = () => (peak = Math.max(peak, fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e)).length));
    const timer = setInterval(count, 100);
    setTimeout(() => {
      clearInterval(timer);
      count();
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
      const settle = () => {
        const left = fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e)).length;
        if (left < 20) return resolve({ peakProcesses: peak, afterKill: left });
        setTimeout(settle, 200);
      };
      setTimeout(settle, 200);
    }, 4000);
  });
}

/** Syscall numbers perl's syscall() needs (x86_64, else aarch64). */
const NR = process.arch === 'arm64' ? { mount: 40, ptrace: 117, keyctl: 219 } : { mount: 165, ptrace: 101, keyctl: 250 };
/** perl runs the raw call and prints the errno it failed with (its number), or what it got. */
const perl = (code) => run('perl', ['-e', code]);

/**
 * The kernel surface the seccomp filter closes, each call made raw (util-linux's tools refuse
 * some before calling the kernel): new namespaces (user, network), a mount, ptrace of its own
 * child (allowed by Yama and uids alike, so only the filter stops it), the session keyring.
 */
async function kernelSurface() {
  return {
    seccompStatus: attempt(() => (fs.readFileSync('/proc/self/status', 'utf8').match(/^Seccomp:.*$/m) || [''])[0]),
    privileges: attempt(() =>
      fs.readFileSync('/proc/self/status', 'utf8').split('\n').filter((l) => /^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):/.test(l)),
    ),
    unshareUser: await run('unshare', ['-U', 'true']),
    unshareUserRoot: await run('unshare', ['-Ur', 'id', '-u']),
    unshareNet: await run('unshare', ['-n', 'true']),
    mount: await perl(
      'my ($s, $t, $f) = ("none", "/tmp", "tmpfs"); syscall(' + NR.mount + ', $s, $t, $f, 0, 0) == -1 ? print $!+0 : print "mounted"',
    ),
    ptraceChild: await perl(
      '$p = fork; if (!$p) { sleep 30; exit } $r = syscall(' + NR.ptrace + ', 16, $p, 0, 0); ' +
        'print $r == -1 ? $!+0 : "attached"; kill 9, $p',
    ),
    keyctl: await perl('$r = syscall(' + NR.keyctl + ', 0, -3, 1); print $r == -1 ? $!+0 : "keyring $r"'),
  };
}

/** What a build step and a server both try: files, processes, the stores directly, limits, the kernel. */
async function common(memoryMb) {
  const report = { uid: process.getuid(), env, limits: attempt(() => fs.readFileSync('/proc/self/limits', 'utf8')) };
  report.proc1Environ = attempt(() => fs.readFileSync('/proc/1/environ', 'utf8'));
  report.proc1Cmdline = attempt(() => fs.readFileSync('/proc/1/cmdline', 'utf8').split('\0').join(' ').trim());
  report.powercap = attempt(() => fs.readdirSync('/sys/devices/virtual/powercap'));
  report.procScan = scanProc();
  report.workerEnvirons = {};
  for (const pid of targets.workerPids) report.workerEnvirons[pid] = attempt(() => fs.readFileSync('/proc/' + pid + '/environ', 'utf8'));
  report.secretsKey = attempt(() => fs.readFileSync(targets.dataDir + '/secrets.key', 'utf8'));
  report.bootstrapKey = attempt(() => fs.readFileSync(targets.dataDir + '/bootstrap-api-key', 'utf8'));
  report.listings = {};
  const dirs = [
    targets.dataDir,
    targets.dataDir + '/artifacts',
    targets.dataDir + '/runtime',
    targets.dataDir + '/builds',
    targets.otherArtifact,
  ];
  for (const dir of dirs) {
    report.listings[dir] = attempt(() => fs.readdirSync(dir));
  }
  report.killOther = attempt(() => process.kill(targets.otherPid, 'SIGKILL'));
  report.redisDirect = await redis(['-h', '127.0.0.1', '-p', '6379', 'PING']);
  // A read, not FLUSHALL: were the confinement broken, this Redis is shared with other tests.
  report.redisDirectDbSize = await redis(['-h', '127.0.0.1', '-p', '6379', 'DBSIZE']);
  const psql = ['-w', '-X', '-A', '-t', '-h', '127.0.0.1', '-p', '5432', '-U', targets.superuser];
  const quickly = { env: { PGCONNECT_TIMEOUT: '5' } };
  report.pgSuperuserDirect = await run('psql', [...psql, '-d', targets.controlDb, '-c', 'SELECT 1'], quickly);
  report.pgOtherDirect = await run('psql', [...psql, '-d', targets.otherDb, '-c', 'SELECT 1'], quickly);
  report.kernel = await kernelSurface();
  report.forkBomb = await forkBomb();
  report.memory = await hog(2 * memoryMb);
  report.stillAlive = true;
  return report;
}

module.exports = { common, redis, psql, withDatabase, asUser, targets };
`;

const BUILD = String.raw`const fs = require('node:fs');
const { common, targets } = require('./attacks.js');

// The build step's attempts; the report ships in the artifact, for the server to hand out.
common(targets.buildMemoryMb).then((report) => {
  fs.writeFileSync(__dirname + '/build-report.json', JSON.stringify(report));
  console.log('hostile build attempts done');
});
`;

const SERVER = String.raw`const http = require('node:http');
const fs = require('node:fs');
const { common, redis, psql, withDatabase, asUser, targets } = require('./attacks.js');

const env = process.env;

/** The server's attempts: the build step's, plus what its own store credentials could reach. */
async function attack() {
  const report = await common(targets.memoryMb);
  report.redisOwnKey = await redis(['-u', env.REDIS_URI, 'SET', env.REDIS_PREFIX + ':probe', 'mine']);
  report.redisFlushAll = await redis(['-u', env.REDIS_URI, 'FLUSHALL']);
  report.redisConfigGet = await redis(['-u', env.REDIS_URI, 'CONFIG', 'GET', '*']);
  report.redisOtherKey = await redis(['-u', env.REDIS_URI, 'GET', 'bull:x']);
  report.pgOwn = await psql(env.DATABASE_URI, 'SELECT current_user');
  report.pgControlPlane = await psql(withDatabase(env.DATABASE_URI, targets.controlDb), 'SELECT count(*) FROM deployments');
  report.pgOtherDeployment = await psql(withDatabase(env.DATABASE_URI, targets.otherDb), 'SELECT 1');
  report.pgSuperuserThroughFront = await psql(asUser(withDatabase(env.DATABASE_URI, targets.controlDb), targets.superuser), 'SELECT 1');
  return report;
}

let running = null;
http
  .createServer((req, res) => {
    if (req.url === '/ok') return res.end('ok');
    if (req.url === '/build-report')
      return res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(fs.readFileSync(__dirname + '/build-report.json'));
    if (req.url === '/attack') {
      running = running || attack();
      return running.then(
        (report) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(report)),
        (err) => res.writeHead(500).end(String(err && err.stack)),
      );
    }
    res.end('hostile');
  })
  .listen(Number(env.PORT), '127.0.0.1', () => console.log('hostile app listening'));
`;

/** How much a log-flood app writes to stdout without a newline, per `GET /flood`. */
export const FLOOD_BYTES = 64 * 1024 * 1024;

/**
 * A hostile app (for the deployer-memory e2e test): `GET /flood` writes FLOOD_BYTES to stdout
 * without a single newline, then "\nflood done\n"; `/ok` is the health probe, `/` answers.
 */
export const LOG_FLOOD_SERVER = String.raw`const http = require('node:http');
const piece = Buffer.alloc(1 << 20, 'F');
function flood(done) {
  let left = ${FLOOD_BYTES} / piece.length;
  const next = () => {
    while (left > 0) {
      left -= 1;
      if (!process.stdout.write(piece)) return process.stdout.once('drain', next);
    }
    process.stdout.write('\nflood done\n', done);
  };
  next();
}
http.createServer((req, res) => {
  if (req.url === '/ok') return res.end('ok');
  if (req.url === '/flood') return flood(() => res.end('flooded'));
  res.end('flood app');
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('flood app listening'));
`;
