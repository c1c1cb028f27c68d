import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '@slipway/config';
import { registryConfiguration } from './registry-config.js';
import { loadOrCreateSigningKey, selfSignedCertificate } from './signing-key.js';

export interface RunningRegistry {
  child: ChildProcess;
  /** What it printed so far (its JSON log lines). */
  output: () => string;
  exited: Promise<number | null>;
  stop: () => Promise<void>;
}

/**
 * Writes the registry's configuration and token certificate under its storage dir (0700; the
 * signing key is created on first use) and returns the config file. Generated every start, so
 * a changed variable takes effect on restart.
 */
export function prepareRegistry(config: Pick<Config, 'registry' | 'secretsKey'>, options: { readOnly?: boolean } = {}): string {
  const dir = config.registry.storageDir;
  mkdirSync(path.join(dir, 'storage'), { recursive: true, mode: 0o700 });
  const key = loadOrCreateSigningKey(config.registry.signingKeyFile);
  const certificate = path.join(dir, 'token-issuer.crt');
  writeFileSync(certificate, selfSignedCertificate(key), { mode: 0o600 });
  const file = path.join(dir, options.readOnly ? 'config.readonly.yml' : 'config.yml');
  writeFileSync(file, registryConfiguration(config, certificate, options), { mode: 0o600 });
  return file;
}

/** Whether the registry answers `GET /v2/` (with 401: it wants a token). */
export async function registryAnswers(internalUrl: string): Promise<boolean> {
  try {
    const res = await fetch(`${internalUrl}/v2/`, { signal: AbortSignal.timeout(1_000) });
    await res.body?.cancel();
    return res.status === 401 || res.status === 200;
  } catch {
    return false;
  }
}

/** Starts `docker-registry serve <config>` and resolves once it answers (or rejects if it exits first). */
export async function startRegistry(
  config: Pick<Config, 'registry' | 'secretsKey'>,
  options: { readOnly?: boolean; timeoutMs?: number } = {},
): Promise<RunningRegistry> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const file = prepareRegistry(config, options);
  const child = spawn(config.registry.binary, ['serve', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: Buffer) => (out = (out + d.toString()).slice(-200_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.once('error', (err) => {
      out += `\n${err.message}`;
      resolve(-1);
    });
  });
  let gone = false;
  void exited.then(() => (gone = true));
  const deadline = Date.now() + timeoutMs;
  while (!(await registryAnswers(config.registry.internalUrl))) {
    if (gone) throw new Error(`docker-registry exited before answering:\n${out.slice(-4000)}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`docker-registry did not answer on ${config.registry.internalUrl} within ${timeoutMs} ms:\n${out.slice(-4000)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    output: () => out,
    exited,
    stop: async () => {
      if (gone) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
