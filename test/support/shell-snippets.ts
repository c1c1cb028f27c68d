import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

/** A fenced shell block of a Markdown file: the ones marked `no-run` carry the reason they are not run. */
export interface Snippet {
  /** 1-based line of the opening fence. */
  line: number;
  code: string;
  /** Set for a ```` ```sh no-run <reason> ```` block. */
  noRun?: string;
}

const FENCE = /^```(sh|bash)(?:[ \t]+(.*))?$/;

/**
 * Every ```` ```sh ```` and ```` ```bash ```` block of `markdown`, in order. A block whose info
 * string goes on with `no-run` is not to be run; the rest of the info string says why (an empty
 * reason is an error, so every skipped block is explained where it stands). Any other info string
 * after the language is an error too, so a typo cannot silently skip a block.
 */
export function shellSnippets(markdown: string): Snippet[] {
  const lines = markdown.split('\n');
  const snippets: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) {
      // Skip over blocks of other languages, whose content may hold a line like ```sh.
      if (/^```\S*/.test(lines[i]!)) {
        const end = lines.indexOf('```', i + 1);
        if (end < 0) throw new Error(`unclosed code block at line ${i + 1}`);
        i = end;
      }
      continue;
    }
    const end = lines.indexOf('```', i + 1);
    if (end < 0) throw new Error(`unclosed code block at line ${i + 1}`);
    const info = (open[2] ?? '').trim();
    const snippet: Snippet = { line: i + 1, code: lines.slice(i + 1, end).join('\n') };
    if (info) {
      const noRun = /^no-run(?:\s+(.*))?$/.exec(info);
      if (!noRun)
        throw new Error(`line ${i + 1}: unknown info string '${info}' (only 'no-run <reason>' is understood)`);
      if (!noRun[1]?.trim()) throw new Error(`line ${i + 1}: a no-run block must say why it is not run`);
      snippet.noRun = noRun[1].trim();
    }
    snippets.push(snippet);
    i = end;
  }
  return snippets;
}

export interface SnippetFailure {
  snippet: Snippet;
  reason: string;
  output: string;
}

/**
 * One bash session (`set -eo pipefail`) that runs snippets one after the other, so variables and
 * functions one defines are there for the next, as for a reader pasting them into one terminal.
 * A snippet fails when a command in it fails (the shell then exits) or when it runs past its
 * time limit.
 */
export class ShellSession {
  private readonly child: ChildProcess;
  private output = '';
  private readonly listeners = new Set<() => void>();
  private count = 0;
  private closed = false;

  constructor(
    private readonly scratch: string,
    env: Record<string, string>,
    cwd: string,
  ) {
    this.child = spawn('bash', ['--noprofile', '--norc'], {
      cwd,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    const onData = (data: Buffer) => {
      this.output += data.toString();
      for (const l of this.listeners) l();
    };
    this.child.stdout!.on('data', onData);
    this.child.stderr!.on('data', onData);
    // 'close', not 'exit': the shell can exit before its last output is read, and a failure
    // must carry everything the snippet printed.
    this.child.on('close', () => {
      this.closed = true;
      for (const l of this.listeners) l();
    });
    this.child.stdin!.write('set -eo pipefail\n');
  }

  /** Runs one snippet; resolves with null when it succeeded, else with why it did not. */
  run(snippet: Snippet, timeoutMs: number): Promise<SnippetFailure | null> {
    const n = ++this.count;
    const file = path.join(this.scratch, `snippet-${n}.sh`);
    writeFileSync(file, `${snippet.code}\n`);
    const marker = `__snippet_${n}_done__`;
    const start = this.output.length;
    this.child.stdin!.write(`source ${file}\necho ${marker}\n`);
    return new Promise((resolve) => {
      const finish = (failure: SnippetFailure | null) => {
        clearTimeout(timer);
        this.listeners.delete(check);
        resolve(failure);
      };
      const check = () => {
        const output = this.output.slice(start);
        if (output.includes(marker)) return finish(null);
        if (this.closed) {
          finish({ snippet, reason: `the shell exited with ${this.child.exitCode ?? this.child.signalCode}`, output });
        }
      };
      const timer = setTimeout(
        () => finish({ snippet, reason: `still running after ${timeoutMs} ms`, output: this.output.slice(start) }),
        timeoutMs,
      );
      this.listeners.add(check);
      check();
    });
  }

  /** Everything the session printed so far. */
  transcript(): string {
    return this.output;
  }

  /** Ends the shell and whatever it still runs (its own process group). */
  close(): void {
    if (this.child.exitCode === null && this.child.signalCode === null && this.child.pid) {
      try {
        process.kill(-this.child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}
