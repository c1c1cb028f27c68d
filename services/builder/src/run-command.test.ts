import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { CommandAbortedError, runShellCommand } from './run-command.js';

const env = { PATH: '/usr/local/bin:/usr/bin:/bin' };

/** Alive and not a zombie waiting to be reaped. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('runShellCommand', () => {
  it('keeps 64 KiB of a newline-free 8 MB line, counts the rest, and waits on a slow consumer', async () => {
    const lines: string[] = [];
    let waits = 0;
    const result = await runShellCommand({
      command: 'head -c 8388608 /dev/zero | tr "\\0" x; printf "\\nafter\\n"',
      cwd: tmpdir(),
      env,
      signal: new AbortController().signal,
      onLine: (line) => lines.push(line),
      backlog: async () => {
        waits += 1;
        await new Promise((r) => setTimeout(r, 1));
      },
    });
    expect(result.exitCode).toBe(0);
    expect(lines).toEqual([`${'x'.repeat(64 * 1024)}… [${8 * 1024 * 1024 - 64 * 1024} bytes dropped]`, 'after']);
    expect(waits).toBeGreaterThan(0);
  });

  it('streams stdout and stderr line by line and reports the exit code', async () => {
    const lines: string[] = [];
    const result = await runShellCommand({
      command: 'printf "one\\ntwo\\r\\nthree"; echo oops >&2; exit 4',
      cwd: tmpdir(),
      env,
      signal: new AbortController().signal,
      onLine: (line, stream) => lines.push(`${stream}:${line}`),
    });
    expect(result).toEqual({ exitCode: 4, signal: null });
    expect(lines.filter((l) => l.startsWith('stdout:'))).toEqual(['stdout:one', 'stdout:two', 'stdout:three']);
    expect(lines).toContain('stderr:oops');
  });

  it('passes exactly the given environment', async () => {
    const lines: string[] = [];
    await runShellCommand({
      command: 'echo "a=$A home=${HOME:-none}"',
      cwd: tmpdir(),
      env: { ...env, A: 'b' },
      signal: new AbortController().signal,
      onLine: (line) => lines.push(line),
    });
    expect(lines).toEqual(['a=b home=none']);
  });

  it('kills what a finished step left running in its group', async () => {
    const lines: string[] = [];
    await runShellCommand({
      command: 'sleep 30 & echo "pid $!"',
      cwd: tmpdir(),
      env,
      signal: new AbortController().signal,
      onLine: (line) => lines.push(line),
    });
    const pid = Number(lines[0]!.split(' ')[1]);
    await until(() => !alive(pid));
  });

  it('on abort, SIGTERMs the whole group and SIGKILLs what ignores it', async () => {
    const controller = new AbortController();
    const pids: number[] = [];
    const run = runShellCommand({
      // A child that ignores SIGTERM, and the shell waiting for it.
      command: `sh -c 'trap "" TERM; echo "stubborn $$"; while true; do sleep 1; done' & wait`,
      cwd: tmpdir(),
      env,
      signal: controller.signal,
      killGraceMs: 500,
      onLine: (line) => {
        if (line.startsWith('stubborn ')) pids.push(Number(line.split(' ')[1]));
      },
    });
    await until(() => pids.length === 1);
    controller.abort('interrupted');
    const error = await run.catch((e) => e);
    expect(error).toBeInstanceOf(CommandAbortedError);
    expect(error.reason).toBe('interrupted');
    await until(() => !alive(pids[0]!));
  });
});
