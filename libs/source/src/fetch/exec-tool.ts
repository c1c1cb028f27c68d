import { execFile } from 'node:child_process';
import path from 'node:path';

/**
 * A fixed search path for the tools the fetchers run (git, tar), plus the directory of the
 * running node: the fetchers never inherit the worker's environment (its database URL and
 * secrets key must not reach a git credential helper or a hook).
 */
export const TOOL_PATH = [
  path.dirname(process.execPath),
  '/usr/local/sbin',
  '/usr/local/bin',
  '/usr/sbin',
  '/usr/bin',
  '/sbin',
  '/bin',
].join(':');

/** Why a source could not be fetched, in words a user can act on (it ends up in `status_message`). */
export class SourceFetchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SourceFetchError';
  }
}

export interface ToolResult {
  stdout: string;
  stderr: string;
}

/** What a failed tool run looked like; `aborted` when the caller's signal stopped it. */
export class ToolError extends Error {
  constructor(
    readonly tool: string,
    readonly exitCode: number | null,
    readonly stderr: string,
    readonly timedOut: boolean,
    readonly aborted: boolean,
  ) {
    super(`${tool} failed${exitCode !== null ? ` (exit code ${exitCode})` : ''}: ${stderr.trim() || '(no output)'}`);
    this.name = 'ToolError';
  }
}

export interface ToolOptions {
  cwd?: string;
  env?: Record<string, string>;
  signal?: AbortSignal;
  timeoutMs: number;
}

/**
 * Runs a tool with execFile (never a shell: arguments are never parsed or expanded) under a
 * timeout and the caller's AbortSignal. Resolves with its output; rejects with ToolError.
 */
export function runTool(file: string, args: readonly string[], options: ToolOptions): Promise<ToolResult> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      {
        cwd: options.cwd,
        env: { PATH: TOOL_PATH, LC_ALL: 'C', ...options.env },
        signal: options.signal,
        timeout: options.timeoutMs,
        killSignal: 'SIGKILL',
        maxBuffer: 64 * 1024 * 1024,
        encoding: 'utf8',
      },
      (err, stdout, stderr) => {
        if (!err) return resolve({ stdout, stderr });
        const e = err as NodeJS.ErrnoException & { code?: number | string; killed?: boolean; signal?: string };
        const aborted = options.signal?.aborted === true || e.name === 'AbortError';
        const exitCode = typeof e.code === 'number' ? e.code : null;
        const timedOut = !aborted && e.killed === true && exitCode === null;
        const detail = typeof e.code === 'string' && !stderr ? `${e.code}: ${e.message}` : stderr;
        reject(new ToolError(file, exitCode, detail, timedOut, aborted));
      },
    );
  });
}
