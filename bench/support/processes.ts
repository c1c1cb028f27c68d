import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** A service started by the bench, as its own process (as in production). */
export interface BenchProcess {
  child: ChildProcess;
  url: string;
  /** Everything it printed so far (for failures). */
  output: () => string;
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

/** Starts `node <args>` with `env`, waits until `GET <url><readyPath>` answers 2xx. */
export async function startProcess(args: string[], env: Record<string, string>, port: number, readyPath = '/healthz'): Promise<BenchProcess> {
  const child = spawn(process.execPath, args, { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const chunks: string[] = [];
  // Keep only the tail: a bench logs every request.
  const keep = (d: Buffer) => {
    chunks.push(d.toString());
    if (chunks.length > 200) chunks.splice(0, chunks.length - 200);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const url = `http://127.0.0.1:${port}`;
  const output = () => chunks.join('');
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited with ${child.exitCode}:\n${output()}`);
    const res = await fetch(url + readyPath).catch(() => null);
    if (res?.ok) break;
    if (Date.now() > deadline) throw new Error(`${args.join(' ')} did not answer ${readyPath}:\n${output()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    child,
    url,
    output,
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
