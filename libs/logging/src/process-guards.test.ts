import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const GUARDS = fileURLToPath(new URL('./process-guards.ts', import.meta.url));

/** Runs `body` in a fresh Node process with the guards installed (logging to stdout). */
function run(body: string) {
  const script = `
    import pino from 'pino';
    import { installProcessGuards } from ${JSON.stringify(GUARDS)};
    installProcessGuards(pino({ base: null }));
    ${body}
  `;
  return spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 20_000,
    cwd: fileURLToPath(new URL('.', import.meta.url)),
  });
}

describe('installProcessGuards', () => {
  it('logs a rejection nobody handled and keeps the process running', () => {
    const out = run(`
      Promise.reject(new Error('forgotten promise'));
      setTimeout(() => { console.log('STILL-SERVING'); process.exit(0); }, 200);
    `);
    expect(out.status, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/unhandled promise rejection.*kept serving/);
    expect(out.stdout).toContain('forgotten promise');
    expect(out.stdout).toContain('STILL-SERVING');
  });

  it('logs an uncaught exception and exits 1', () => {
    const out = run(`
      setTimeout(() => { throw new Error('broken state'); }, 10);
      setTimeout(() => { console.log('STILL-SERVING'); process.exit(0); }, 500);
    `);
    expect(out.status).toBe(1);
    expect(out.stdout).toMatch(/uncaught exception; exiting/);
    expect(out.stdout).toContain('broken state');
    expect(out.stdout).not.toContain('STILL-SERVING');
  });
});
