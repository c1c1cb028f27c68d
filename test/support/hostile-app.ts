/**
 * The server of a hostile app (CommonJS, no dependencies) for the sandbox e2e test. `GET /attack`
 * tries, one after the other, everything an app must not be able to do and answers with a JSON
 * report of what it got; `GET /ok` is its health probe. What it aims at comes from its secrets
 * (an attacker who knows the layout): DATA_DIR, OTHER_PID (a process of another deployment),
 * OTHER_DB (another deployment's database), CONTROL_DB and SUPERUSER (the control plane's
 * database and its role), WORKER_PIDS (the api's and workers' pids), MEMORY_MB (its own limit).
 *
 * Every attempt that talks to Postgres or Redis has a positive control (the app's own database
 * and key prefix must work), so "it failed" never just means "the client is broken".
 */
export const HOSTILE_SERVER = String.raw`
const http = require('node:http');
const fs = require('node:fs');
const { execFile, spawn } = require('node:child_process');

const env = process.env;
// libuv's thread pool starts now, not when the fork bomb has used up every pid.
fs.readFile('/proc/self/stat', () => undefined);

/** A command's outcome, never throwing: exit code, signal and (trimmed) output. */
function run(command, args, options = {}) {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: 15000, env: { ...env, ...options.env }, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : String(err.code)) : 0, signal: err && err.signal ? err.signal : null, out: (String(stdout) + String(stderr)).trim().slice(0, 2000) });
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
  const script = 'const a=[];let n=0;for(;;){const b=Buffer.alloc(16<<20);b.fill(1);a.push(b);n+=16;process.stdout.write(n+"\\n");if(n>=' + mb + ')break;}console.log("done")';
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code, signal) => {
      const lines = out.trim().split('\n');
      resolve({ code, signal, reachedMb: Number(lines.filter((l) => /^\d+$/.test(l)).pop() || 0), done: lines.includes('done'), stderr: err.slice(0, 500) });
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

async function attack() {
  const report = { uid: process.getuid(), env, limits: attempt(() => fs.readFileSync('/proc/self/limits', 'utf8')) };
  report.proc1Environ = attempt(() => fs.readFileSync('/proc/1/environ', 'utf8'));
  report.procScan = scanProc();
  report.workerEnvirons = {};
  for (const pid of (env.WORKER_PIDS || '').split(',').filter(Boolean)) {
    report.workerEnvirons[pid] = attempt(() => fs.readFileSync('/proc/' + pid + '/environ', 'utf8'));
  }
  report.secretsKey = attempt(() => fs.readFileSync(env.DATA_DIR + '/secrets.key', 'utf8'));
  report.bootstrapKey = attempt(() => fs.readFileSync(env.DATA_DIR + '/bootstrap-api-key', 'utf8'));
  report.listings = {};
  for (const dir of [env.DATA_DIR, env.DATA_DIR + '/artifacts', env.DATA_DIR + '/runtime', env.DATA_DIR + '/builds', '/srv', '/home']) {
    report.listings[dir] = attempt(() => fs.readdirSync(dir));
  }
  report.killOther = attempt(() => process.kill(Number(env.OTHER_PID), 'SIGKILL'));

  report.redisOwnKey = await redis(['-u', env.REDIS_URI, 'SET', env.REDIS_PREFIX + ':probe', 'mine']);
  report.redisFlushAll = await redis(['-u', env.REDIS_URI, 'FLUSHALL']);
  report.redisConfigGet = await redis(['-u', env.REDIS_URI, 'CONFIG', 'GET', '*']);
  report.redisOtherKey = await redis(['-u', env.REDIS_URI, 'GET', 'bull:x']);
  report.redisDirect = await redis(['-h', '127.0.0.1', '-p', '6379', 'PING']);

  report.pgOwn = await psql(env.DATABASE_URI, 'SELECT current_user');
  report.pgControlPlane = await psql(withDatabase(env.DATABASE_URI, env.CONTROL_DB), 'SELECT count(*) FROM deployments');
  report.pgOtherDeployment = await psql(withDatabase(env.DATABASE_URI, env.OTHER_DB), 'SELECT 1');
  report.pgSuperuserThroughFront = await psql(asUser(withDatabase(env.DATABASE_URI, env.CONTROL_DB), env.SUPERUSER), 'SELECT 1');
  report.pgSuperuserDirect = await run('psql', ['-w', '-X', '-A', '-t', '-h', '127.0.0.1', '-p', '5432', '-U', env.SUPERUSER, '-d', env.CONTROL_DB, '-c', 'SELECT 1'], { env: { PGCONNECT_TIMEOUT: '5' } });

  report.forkBomb = await forkBomb();
  report.memory = await hog(2 * Number(env.MEMORY_MB));
  report.stillAlive = true;
  return report;
}

let running = null;
http
  .createServer((req, res) => {
    if (req.url === '/ok') return res.end('ok');
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
