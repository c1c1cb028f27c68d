import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** A service started by the bench, as its own process (as in production). */
export interface BenchProcess {
  child: ChildProcess;
  url: string;
  /** The tail of what it printed (for failures). */
  output: () => string;
  /**
   * Its last 20 log lines at warn or above, kept apart from the tail, which a
   * bench's access log lines overrun within a second.
   */
  problems: () => string;
  /** Resident set size now, in MB (Linux /proc). */
  rssMb: () => number;
  stop: () => Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A JSON log line at warn or above: Slipway's services log level labels, pino's default numbers. */
const PROBLEM = /"level":("(warn|error|fatal)"|[456]0\b)/;

/** Starts `node <args>` with `env`, waits until `GET <url><readyPath>` answers 2xx (or `readyStatus`). */
export async function startProcess(
  args: string[],
  env: Record<string, string>,
  port: number,
  readyPath = '/healthz',
  readyStatus?: number,
): Promise<BenchProcess> {
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const chunks: string[] = [];
  const problems: string[] = [];
  let partial = '';
  // Keep only the tail: a bench logs every request. Warnings and errors are kept apart.
  const keep = (d: Buffer) => {
    const text = d.toString();
    chunks.push(text);
    if (chunks.length > 200) chunks.splice(0, chunks.length - 200);
    const lines = (partial + text).split('\n');
    partial = lines.pop()!;
    for (const line of lines) if (PROBLEM.test(line)) problems.push(line);
    if (problems.length > 20) problems.splice(0, problems.length - 20);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const url = `http://127.0.0.1:${port}`;
  const output = () => chunks.join('');
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited with ${child.exitCode}:\n${output()}`);
    const res = await fetch(url + readyPath).catch(() => null);
    await res?.arrayBuffer().catch(() => {});
    if (res && (readyStatus === undefined ? res.ok : res.status === readyStatus)) break;
    if (Date.now() > deadline) throw new Error(`${args.join(' ')} did not answer ${readyPath}:\n${output()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    child,
    url,
    output,
    problems: () => problems.join('\n'),
    rssMb: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
    },
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
