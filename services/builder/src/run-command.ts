import { spawn } from 'node:child_process';
import { LineSplitter } from '@slipway/logging';
import { handOverSeccomp } from '@slipway/runtime';

export interface RunCommandOptions {
  /** A shell command line, run as `/bin/sh -c <command>`. */
  command: string;
  cwd: string;
  /** The whole environment: nothing of the worker's own leaks in. */
  env: Record<string, string>;
  /** Aborting it stops the command's whole process group. */
  signal: AbortSignal;
  /**
   * Each line of output, as it comes (a trailing partial line when the stream ends). A line is
   * at most 64 KiB: the rest of a longer one is dropped, counted in "… [N bytes dropped]".
   */
  onLine: (line: string, stream: 'stdout' | 'stderr') => void;
  /** Awaited after each chunk of output with the pipe paused: the consumer catching up. */
  backlog?: () => Promise<void>;
  /** Between SIGTERM and SIGKILL when stopping; default 5 s. */
  killGraceMs?: number;
  /**
   * What to spawn instead of `/bin/sh -c <command>` in `cwd`: the same shell wrapped in the
   * build's sandbox (BuildJail.launch). Its whole process tree is still this one group.
   */
  launch?: { command: string; args: string[]; cwd: string; seccomp?: Buffer };
}

export interface CommandResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
}

/** The command was stopped because its signal aborted; `reason` is the signal's. */
export class CommandAbortedError extends Error {
  constructor(readonly reason: unknown) {
    super(`Command stopped: ${String(reason)}`);
    this.name = 'CommandAbortedError';
  }
}

const POLL_MS = 100;

/**
 * Runs a user's build step as `/bin/sh -c` in its own process group (detached), streaming its
 * output line by line. Install and build commands start their own children (npm → node →
 * compilers), and a background process may outlive the shell, so everything is signalled as a
 * group: on abort SIGTERM, then SIGKILL after the grace period; after a normal exit, whatever
 * the command left running in its group is killed too. Resolves with the exit status, or
 * rejects with CommandAbortedError once the group is gone (or SIGKILLed) after an abort.
 */
export function runShellCommand(options: RunCommandOptions): Promise<CommandResult> {
  const { signal, onLine } = options;
  const grace = options.killGraceMs ?? 5_000;
  if (signal.aborted) return Promise.reject(new CommandAbortedError(signal.reason));

  const launch = options.launch ?? { command: '/bin/sh', args: ['-c', options.command], cwd: options.cwd };
  const child = spawn(launch.command, launch.args, {
    cwd: launch.cwd,
    env: options.env,
    detached: true,
    // Descriptor 3 of a sandboxed step: its seccomp program, for bubblewrap.
    stdio: ['ignore', 'pipe', 'pipe', ...(launch.seccomp ? ['pipe' as const] : [])],
  });
  if (launch.seccomp) handOverSeccomp(child, launch.seccomp);
  const pgid = child.pid;

  const split = (stream: NodeJS.ReadableStream, name: 'stdout' | 'stderr') => {
    const lines = new LineSplitter((line) => onLine(line, name), { breaks: 'any' });
    stream.on('data', (chunk: Buffer) => {
      lines.push(chunk);
      if (!options.backlog) return;
      stream.pause();
      void options.backlog().finally(() => stream.resume());
    });
    return new Promise<void>((resolve) => {
      const end = () => {
        lines.end();
        resolve();
      };
      stream.once('end', end);
      stream.once('close', end);
      stream.once('error', end);
    });
  };
  const drained = Promise.all([split(child.stdout!, 'stdout'), split(child.stderr!, 'stderr')]);

  const exited = new Promise<CommandResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (exitCode, sig) => resolve({ exitCode, signal: sig }));
  });

  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= stopGroup(pgid, grace);
  };
  signal.addEventListener('abort', stop, { once: true });

  return (async () => {
    try {
      const result = await exited;
      if (!signal.aborted) killGroup(pgid, 'SIGKILL'); // leftovers of a finished step
      // Output still buffered in the pipes is read before the verdict; a pipe held open by
      // something that escaped the group cannot keep us waiting for ever.
      await Promise.race([drained, new Promise((r) => setTimeout(r, 2_000).unref())]);
      if (signal.aborted) {
        stop();
        await stopping;
        throw new CommandAbortedError(signal.reason);
      }
      return result;
    } finally {
      signal.removeEventListener('abort', stop);
      child.stdout?.destroy();
      child.stderr?.destroy();
    }
  })();
}

/** SIGTERM to the group, SIGKILL if any member is still there after `graceMs`. */
async function stopGroup(pgid: number | undefined, graceMs: number): Promise<void> {
  if (!killGroup(pgid, 'SIGTERM')) return;
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    if (!killGroup(pgid, 0)) return;
  }
  killGroup(pgid, 'SIGKILL');
}

/** Signals the process group; false when it no longer exists. */
function killGroup(pgid: number | undefined, sig: NodeJS.Signals | 0): boolean {
  if (!pgid) return false;
  try {
    process.kill(-pgid, sig);
    return true;
  } catch {
    return false;
  }
}
