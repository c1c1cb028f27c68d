import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { Config } from '@slipway/config';
import { startPushGuard, type PushGuard } from './push-guard.js';
import { backendSocket, registryConfiguration } from './registry-config.js';
import { databaseRooms } from './room-source.js';
import { loadOrCreateSigningKey, selfSignedCertificate } from './signing-key.js';

/** What starting the registry needs of Config: its own settings, and Postgres for the push guard's quota reads. */
export type RegistryProcessConfig = Pick<Config, 'registry' | 'secretsKey' | 'databaseUrl' | 'quotas'>;

export interface RunningRegistry {
  child: ChildProcess;
  /** The push guard on the registry's address, in front of distribution's socket. */
  guard: PushGuard;
  /** What it printed so far (its JSON log lines). */
  output: () => string;
  exited: Promise<number | null>;
  stop: () => Promise<void>;
}

/** Whether distribution answers `GET /v2/` on its socket (with 401: it wants a token). */
function backendAnswers(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ socketPath, path: '/v2/', timeout: 1_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 401 || res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

/**
 * Writes the registry's configuration and token certificate under its storage dir (0700; the
 * signing key is created on first use) and returns the config file. Generated every start, so
 * a changed variable takes effect on restart.
 */
export function prepareRegistry(
  config: Pick<Config, 'registry' | 'secretsKey'>,
  options: { readOnly?: boolean; behindGuard?: boolean } = {},
): string {
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

/**
 * Starts `docker-registry serve <config>` on its socket and, once it answers, the push guard on
 * the registry's address (rejects if distribution exits first or the address is taken).
 */
export async function startRegistry(
  config: RegistryProcessConfig,
  options: { readOnly?: boolean; timeoutMs?: number; log?: (msg: string) => void } = {},
): Promise<RunningRegistry> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const file = prepareRegistry(config, { readOnly: options.readOnly, behindGuard: true });
  const socket = backendSocket(config);
  // A socket file left by a registry that was killed: distribution will not listen over it.
  rmSync(socket, { force: true });
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
  while (!(await backendAnswers(socket))) {
    if (gone) throw new Error(`docker-registry exited before answering:\n${out.slice(-4000)}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`docker-registry did not answer on ${socket} within ${timeoutMs} ms:\n${out.slice(-4000)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const rooms = databaseRooms(config);
  let guard: PushGuard;
  try {
    guard = await startPushGuard({
      host: config.registry.host,
      port: config.registry.port,
      backendSocket: socket,
      rooms,
      log: options.log,
    });
  } catch (err) {
    child.kill('SIGKILL');
    await exited;
    throw new Error(
      `the registry's push guard could not listen on ${config.registry.host}:${config.registry.port}: ${(err as Error).message}`,
    );
  }
  // distribution dying takes the guard with it: the address refuses connections, as before, until the supervisor restarts both.
  void exited.then(() => guard.close().then(rooms.close));
  return {
    child,
    guard,
    output: () => out,
    exited,
    stop: async () => {
      await guard.close();
      await rooms.close();
      if (gone) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * The push guard alone, in front of a distribution it does not run (`slipway registry-guard`:
 * compose, Kubernetes): it listens on the registry's host and port and forwards to
 * SLIPWAY_REGISTRY_UPSTREAM_URL, where `registry-config` made distribution listen. Quotas are
 * read from DATABASE_URL, as under `npm start`.
 */
export async function startGuardOnly(
  config: Pick<Config, 'registry' | 'databaseUrl' | 'quotas'>,
  options: { log?: (msg: string) => void } = {},
): Promise<PushGuard & { upstreamUrl: string }> {
  const upstreamUrl = config.registry.upstreamUrl;
  if (!upstreamUrl)
    throw new Error(
      'SLIPWAY_REGISTRY_UPSTREAM_URL is not set: the push guard does not know where distribution listens',
    );
  const rooms = databaseRooms(config);
  const guard = await startPushGuard({
    host: config.registry.host,
    port: config.registry.port,
    backendUrl: upstreamUrl,
    rooms,
    log: options.log,
  });
  return {
    ...guard,
    upstreamUrl,
    close: async () => {
      await guard.close();
      await rooms.close();
    },
  };
}
