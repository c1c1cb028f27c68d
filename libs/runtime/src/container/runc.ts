import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function runcCommand(args: string[]): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) =>
    execFile('runc', args, { encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ ok: !err, output: `${stdout}${stderr}`.trim() }),
    ),
  );
}

/** Field 22 of /proc/<pid>/stat (start time in clock ticks) and the state letter; null when gone. */
function procStart(pid: number): { state: string; start: string } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0]!, start: fields[19]! };
  } catch {
    return null;
  }
}

/**
 * runc with a state directory of our own (`--root`), so `runc list` shows only Slipway's
 * containers and they survive the deployer: a new deployer finds them there.
 */
export class Runc {
  constructor(readonly root: string) {}

  /** The container's state file exists (created and not deleted), running or not. */
  exists(id: string): boolean {
    return existsSync(`${this.root}/${id}/state.json`);
  }

  /**
   * True while the container's init runs: its recorded pid with its recorded start time and
   * not a zombie (this kind of machine reaps late, so a signal-0 probe would still find it).
   */
  isRunning(id: string): boolean {
    let state: { init_process_pid?: number; init_process_start?: number | string };
    try {
      state = JSON.parse(readFileSync(`${this.root}/${id}/state.json`, 'utf8'));
    } catch {
      return false;
    }
    const proc = state.init_process_pid ? procStart(state.init_process_pid) : null;
    return !!proc && proc.state !== 'Z' && proc.state !== 'X' && proc.start === String(state.init_process_start);
  }

  /**
   * `runc run -d`: starts the container and returns once it runs (or failed); the container's
   * stdout/stderr are `logFd`, which it keeps after we close ours. Errors are runc's own words.
   */
  run(id: string, bundle: string, pidFile: string, logFd: number): Promise<void> {
    return new Promise((resolve, reject) => {
      // stderr too: in detached mode the container inherits runc's stdio, and a pipe would break
      // once we stop reading it. runc's own errors therefore land in the log file as well.
      const child = spawn(
        'runc',
        ['--root', this.root, 'run', '--detach', '--bundle', bundle, '--pid-file', pidFile, id],
        {
          stdio: ['ignore', logFd, logFd],
          detached: true,
        },
      );
      child.once('error', reject);
      child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`runc exited with code ${code}`))));
    });
  }

  async signal(id: string, signal: 'TERM' | 'KILL', all = false): Promise<void> {
    await runcCommand(['--root', this.root, 'kill', ...(all ? ['--all'] : []), id, signal]);
  }

  /** SIGTERM to the container's init, SIGKILL to all of it after `graceMs`; resolves once it stopped. */
  async stop(id: string, graceMs: number): Promise<void> {
    if (!this.isRunning(id)) return;
    await this.signal(id, 'TERM');
    const deadline = Date.now() + graceMs;
    while (Date.now() < deadline) {
      if (!this.isRunning(id)) return;
      await sleep(100);
    }
    await this.signal(id, 'KILL', true);
    for (let i = 0; i < 50 && this.isRunning(id); i++) await sleep(100);
  }

  /** Removes the container (its state and cgroup); nothing there: nothing done. */
  async delete(id: string): Promise<void> {
    if (!this.exists(id)) return;
    const { ok, output } = await runcCommand(['--root', this.root, 'delete', '--force', id]);
    if (!ok && this.exists(id)) throw new Error(`runc delete ${id} failed: ${runcError(output)}`);
  }

  /** Ids of the containers under our root (`runc list`). */
  async list(): Promise<{ id: string; status: string }[]> {
    const { ok, output } = await runcCommand(['--root', this.root, 'list', '--format', 'json']);
    if (!ok || !output || output === 'null') return [];
    return (JSON.parse(output) as { id: string; status: string }[]).map(({ id, status }) => ({ id, status }));
  }
}

/** runc logs `time="…" level=error msg="…"`: the message. */
export function runcError(text: string): string {
  const lines = text.trim().split('\n').filter(Boolean);
  return lines
    .map((l) => /msg="((?:[^"\\]|\\.)*)"/.exec(l)?.[1]?.replace(/\\"/g, '"') ?? l)
    .join('; ')
    .slice(0, 1_000);
}
