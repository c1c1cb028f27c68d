// `node infra/scripts/with-node.mjs <major> <command> [args…]`: runs a command with another Node.js
// major first on PATH (child processes that use process.execPath get it too). The binary comes
// from the npm registry (`node-linux-<arch>@<major>`, a plain package), cached under
// ~/.cache/slipway/node-<major>. CI uses it to run the unit and integration suites on Node 24.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { log, ROOT } from './bootstrap.mjs';

const [major, command, ...args] = process.argv.slice(2);
if (!/^\d+$/.test(major ?? '') || !command) {
  process.stderr.write('usage: node infra/scripts/with-node.mjs <major> <command> [args…]\n');
  process.exit(2);
}
const arch = { x64: 'x64', arm64: 'arm64' }[process.arch];
if (process.platform !== 'linux' || !arch)
  throw new Error(`no Node.js package for ${process.platform}-${process.arch}`);
const pkg = `node-linux-${arch}`;
const prefix = path.join(os.homedir(), '.cache', 'slipway', `node-${major}`);
const bin = path.join(prefix, 'node_modules', pkg, 'bin');
if (!existsSync(path.join(bin, 'node'))) {
  log(`installing Node.js ${major} (${pkg}@${major}) into ${prefix}`);
  mkdirSync(prefix, { recursive: true });
  const installed = spawnSync(
    'npm',
    ['install', '--prefix', prefix, '--no-save', '--no-fund', '--no-audit', `${pkg}@${major}`],
    { stdio: 'inherit' },
  );
  if (installed.status !== 0) process.exit(installed.status ?? 1);
}
const env = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` };
const version = spawnSync(path.join(bin, 'node'), ['--version'], { encoding: 'utf8' }).stdout.trim();
log(`running with Node.js ${version}: ${command} ${args.join(' ')}`);
const result = spawnSync(command, args, { cwd: ROOT, stdio: 'inherit', env });
process.exit(result.status ?? 1);
