import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '@slipway/config';
import { registryAnswers } from './registry-process.js';
import { sweepRegistry } from './sweep.js';

/**
 * How `pnpm slipway registry gc` gets its sweep run at a safe moment: `npm start`'s registry
 * supervisor (main.ts) keeps its pid in the storage dir and sweeps on SIGUSR2 (restarting the
 * registry read-only around it), writing the outcome next to it. With no registry running the
 * command sweeps itself; a registry Slipway does not supervise (compose's) is left alone.
 */
type RegistryConfig = Pick<Config, 'registry' | 'secretsKey' | 'databaseUrl' | 'quotas'>;
export interface SweepResult {
  ok: boolean;
  output: string;
  finishedAt: number;
}

const pidFile = (config: RegistryConfig) => path.join(config.registry.storageDir, 'supervisor.pid');
const resultFile = (config: RegistryConfig) => path.join(config.registry.storageDir, 'sweep-result.json');

/** The supervisor says where to signal it; the returned function takes that back (at exit). */
export function announceSupervisor(config: RegistryConfig): () => void {
  // On a fresh data dir the storage dir is made only when the registry first starts: after this.
  mkdirSync(config.registry.storageDir, { recursive: true, mode: 0o700 });
  writeFileSync(pidFile(config), String(process.pid), { mode: 0o600 });
  return () => {
    if (supervisorPid(config) === process.pid) rmSync(pidFile(config), { force: true });
  };
}

export function recordSweep(config: RegistryConfig, result: Omit<SweepResult, 'finishedAt'>): void {
  writeFileSync(resultFile(config), JSON.stringify({ ...result, finishedAt: Date.now() }), { mode: 0o600 });
}

function supervisorPid(config: RegistryConfig): number | null {
  try {
    const pid = Number(readFileSync(pidFile(config), 'utf8').trim());
    if (!Number.isSafeInteger(pid) || pid <= 1) return null;
    process.kill(pid, 0);
    return pid;
  } catch {
    return null;
  }
}

function lastSweep(config: RegistryConfig): SweepResult | null {
  try {
    return JSON.parse(readFileSync(resultFile(config), 'utf8')) as SweepResult;
  } catch {
    return null;
  }
}

/** Has the sweep run (see above) and resolves with its outcome. */
export async function requestSweep(
  config: RegistryConfig,
  timeoutMs = 35 * 60_000,
): Promise<Omit<SweepResult, 'finishedAt'>> {
  const pid = supervisorPid(config);
  if (pid === null) {
    if (await registryAnswers(config.registry.internalUrl)) {
      return {
        ok: false,
        output:
          `A registry Slipway does not supervise answers at ${config.registry.internalUrl}: ` +
          `run its garbage-collect yourself while it is read-only or stopped (docs/operations.md, ` +
          `The image registry).`,
      };
    }
    const { ok, output } = await sweepRegistry(config, null);
    return { ok, output };
  }
  const asked = Date.now();
  process.kill(pid, 'SIGUSR2');
  const deadline = asked + timeoutMs;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    const result = lastSweep(config);
    if (result && result.finishedAt >= asked) return { ok: result.ok, output: result.output };
    if (supervisorPid(config) === null)
      return { ok: false, output: `The registry supervisor (pid ${pid}) exited before the sweep finished.` };
  }
  return {
    ok: false,
    output: `The registry supervisor (pid ${pid}) did not finish the sweep within ${Math.round(timeoutMs / 1000)} s.`,
  };
}
