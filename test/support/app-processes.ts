import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';

/**
 * Deployed apps run in their own process groups and outlive the deployer by design, so tests
 * that deploy apps must kill what they started themselves. These find them by working
 * directory (under a test's own data dir) and kill whole groups.
 */
export function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** Stops a detached child's whole group: SIGTERM, SIGKILL after `graceMs`, and what is left of the group at the end. */
export async function stopGroup(child: ChildProcess, graceMs = 20_000): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(-child.pid!, 'SIGTERM');
    const timer = setTimeout(() => killGroup(child.pid!), graceMs);
    await exited;
    clearTimeout(timer);
  }
  killGroup(child.pid!);
}

/** Live (non-zombie) processes whose working directory lies under `dir`, with their group. */
export function processesUnder(dir: string): Array<{ pid: number; pgrp: number }> {
  const found: Array<{ pid: number; pgrp: number }> = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      if (!cwd.startsWith(dir + path.sep)) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue;
      found.push({ pid, pgrp: Number(fields[2]) });
    } catch {
      // vanished meanwhile, or not ours to read
    }
  }
  return found;
}
