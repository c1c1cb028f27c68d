import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import { freePort } from './ports.js';

/**
 * A private registry that is not Slipway's: plain CNCF distribution (`docker-registry`) on
 * loopback, plain http, with Basic auth from an htpasswd file (bcrypt, as distribution requires)
 * for one user, as a third-party registry with a password would be.
 */
export interface HtpasswdRegistry {
  /** `127.0.0.1:<port>`. */
  address: string;
  stop: () => Promise<void>;
}

export async function startHtpasswdRegistry(username: string, password: string): Promise<HtpasswdRegistry> {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-htpasswd-registry-'));
  const port = await freePort();
  writeFileSync(path.join(dir, 'htpasswd'), `${username}:${bcrypt.hashSync(password, 8)}\n`, { mode: 0o600 });
  const config = path.join(dir, 'config.yml');
  writeFileSync(
    config,
    [
      'version: 0.1',
      'log:',
      '  level: error',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${path.join(dir, 'storage')}`,
      'http:',
      `  addr: 127.0.0.1:${port}`,
      'auth:',
      '  htpasswd:',
      '    realm: private-registry',
      `    path: ${path.join(dir, 'htpasswd')}`,
      '',
    ].join('\n'),
  );
  const child = spawn('docker-registry', ['serve', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 20_000;
  for (;;) {
    const status = await fetch(`http://127.0.0.1:${port}/v2/`, { signal: AbortSignal.timeout(1_000) }).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 401) break;
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(
        `docker-registry with htpasswd did not answer 401 on 127.0.0.1:${port} (status ${status}):\n${out.slice(-4000)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { address: `127.0.0.1:${port}`, stop };
}
