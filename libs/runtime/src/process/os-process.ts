import { readdirSync, readFileSync } from 'node:fs';

/** What /proc says about one process (Linux). */
interface ProcStat {
  /** R, S, D, Z (zombie), X (dead), T… */
  state: string;
  /** Process group id. */
  pgrp: number;
}

function procStat(pid: number): ProcStat | null | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses, so cut at the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0]!, pgrp: Number(fields[2]) };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // ENOENT: gone. Anything else (no /proc on this OS): unknown.
    return code === 'ENOENT' || code === 'ESRCH' ? null : undefined;
  }
}

const HAS_PROC = procStat(process.pid) != null;

/**
 * True while `pid` runs. `kill(pid, 0)` alone is not enough: once an instance's deployer is
 * gone, its processes are re-parented to PID 1, and where PID 1 does not reap (minimal container
 * inits do not) a dead process stays a zombie that `kill(pid, 0)` still "finds".
 */
export function isProcessAlive(pid: number | null | undefined): boolean {
  if (!pid || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: it exists but belongs to someone else — alive, and not ours to judge further.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (!HAS_PROC) return true;
  const stat = procStat(pid);
  return stat === undefined || (stat !== null && stat.state !== 'Z' && stat.state !== 'X');
}

/**
 * True when `pid` still leads its own process group — what an instance we spawned with
 * `detached: true` does. A recycled pid belonging to an unrelated process almost never does, so
 * this guards the group kill of a re-adopted instance against hitting a stranger.
 */
export function isGroupLeader(pid: number): boolean {
  if (!HAS_PROC) return isProcessAlive(pid);
  const stat = procStat(pid);
  return !!stat && stat.pgrp === pid;
}

/** Live (non-zombie) members of process group `pgid`; on systems without /proc, a best guess. */
export function groupMembers(pgid: number): number[] {
  if (!HAS_PROC) {
    try {
      process.kill(-pgid, 0);
      return [pgid];
    } catch {
      return [];
    }
  }
  const members: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid <= 0) continue;
    const stat = procStat(pid);
    if (stat && stat.pgrp === pgid && stat.state !== 'Z' && stat.state !== 'X') members.push(pid);
  }
  return members;
}

/** Sends `signal` to the whole group (npm, its shell, the server). False when nothing was there. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Stops an instance's process group: SIGTERM, then SIGKILL once `graceMs` has passed with
 * members still alive. Resolves when no member is left (or after the SIGKILL settled).
 */
export async function stopProcessGroup(pgid: number, graceMs: number): Promise<void> {
  if (!groupMembers(pgid).length) return;
  signalGroup(pgid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!groupMembers(pgid).length) return;
    await sleep(100);
  }
  signalGroup(pgid, 'SIGKILL');
  for (let i = 0; i < 20 && groupMembers(pgid).length; i++) await sleep(50);
}
