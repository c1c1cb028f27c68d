import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ShellSession, shellSnippets } from './shell-snippets.js';

/** The guide test's two parts on their own: what counts as a snippet, and when one fails. */
describe('shellSnippets', () => {
  it('takes sh and bash blocks in order, skips other languages, keeps no-run reasons', () => {
    const md = [
      '# t',
      '```sh',
      'echo one',
      '```',
      '```ts',
      '```sh',
      '```',
      '```bash no-run needs a cluster',
      'kubectl get pods',
      '```',
      '```bash',
      'echo two',
      'echo three',
      '```',
    ].join('\n');
    expect(shellSnippets(md)).toEqual([
      { line: 2, code: 'echo one' },
      { line: 8, code: 'kubectl get pods', noRun: 'needs a cluster' },
      { line: 11, code: 'echo two\necho three' },
    ]);
  });

  it('refuses a no-run block without a reason, an unknown info string and an unclosed block', () => {
    expect(() => shellSnippets('```sh no-run\nx\n```')).toThrow(/must say why/);
    expect(() => shellSnippets('```sh norun because\nx\n```')).toThrow(/unknown info string/);
    expect(() => shellSnippets('```sh\nx\n')).toThrow(/unclosed/);
  });
});

describe('ShellSession', () => {
  let scratch: string;
  let session: ShellSession | undefined;
  afterEach(() => {
    session?.close();
    rmSync(scratch, { recursive: true, force: true });
  });
  const start = () => {
    scratch = mkdtempSync(path.join(tmpdir(), 'slipway-shell-'));
    session = new ShellSession(scratch, { PATH: process.env.PATH ?? '' }, scratch);
    return session;
  };

  it('keeps variables and functions from one snippet to the next', async () => {
    const s = start();
    expect(await s.run({ line: 1, code: 'X=42\nf() { echo "f:$1"; }' }, 5_000)).toBeNull();
    expect(await s.run({ line: 5, code: 'f $X' }, 5_000)).toBeNull();
    expect(s.transcript()).toContain('f:42');
  });

  it('fails on a command that fails, inside a pipeline too, with what the snippet printed', async () => {
    const s = start();
    const failure = await s.run({ line: 3, code: 'echo before\nfalse | cat\necho after' }, 5_000);
    expect(failure?.reason).toMatch(/exited with 1/);
    expect(failure?.output).toContain('before');
    expect(failure?.output).not.toContain('after');
  });

  it('fails a snippet that outlives its time limit', async () => {
    const s = start();
    const failure = await s.run({ line: 1, code: 'sleep 30' }, 500);
    expect(failure?.reason).toMatch(/still running after 500 ms/);
  });
});
