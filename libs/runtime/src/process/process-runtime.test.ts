import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ArtifactError, parseEnvFile, readArtifact } from './artifact.js';
import { pickFreePort } from './ports.js';
import { instanceEnvironment } from './instance-environment.js';
import { lastLines } from './instance-log.js';

const root = mkdtempSync(path.join(tmpdir(), 'slipway-runtime-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function artifact(name: string, manifest: Record<string, unknown>, files: Record<string, string> = {}): string {
  const dir = path.join(root, name);
  mkdirSync(path.join(dir, 'app', 'agent'), { recursive: true });
  writeFileSync(path.join(dir, 'artifact.json'), JSON.stringify(manifest));
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(dir, 'app', file), text);
  return dir;
}

const START = { command: 'npm', args: ['run', 'start'], cwd: 'agent' };

describe('instanceEnvironment', () => {
  it('layers graph env < secrets < platform variables, and carries nothing else', () => {
    const env = instanceEnvironment({
      base: { NODE_ENV: 'staging', FROM_GRAPH: 'g', OVERRIDDEN: 'graph' },
      secrets: [
        { name: 'OVERRIDDEN', value: 'secret' },
        { name: 'DATABASE_URI', value: 'postgres://evil/x' },
        { name: 'REDIS_PREFIX', value: 'other' },
      ],
      data: {
        DATABASE_URI: 'postgres://slipway_d_agent_1234abcd:pw@127.0.0.1:20001/slipway_d_agent_1234abcd',
        REDIS_URI: 'redis://slipway-d-d-1:pw@127.0.0.1:20002',
        REDIS_PREFIX: 'slipway-d-d-1',
      },
    });
    expect(env).toEqual({
      NODE_ENV: 'staging',
      FROM_GRAPH: 'g',
      OVERRIDDEN: 'secret',
      // The platform's values win over secrets of the same name.
      DATABASE_URI: 'postgres://slipway_d_agent_1234abcd:pw@127.0.0.1:20001/slipway_d_agent_1234abcd',
      REDIS_URI: 'redis://slipway-d-d-1:pw@127.0.0.1:20002',
      REDIS_PREFIX: 'slipway-d-d-1',
    });
  });

  it('defaults NODE_ENV to production', () => {
    const env = instanceEnvironment({ secrets: [], data: {} });
    expect(env.NODE_ENV).toBe('production');
  });
});

describe('readArtifact', () => {
  it('resolves the start directory and the graph config env file', async () => {
    const dir = artifact(
      'ok',
      { revision_id: 'r', start: START, env: '.env' },
      { 'agent/.env': '# comment\nexport A=1\nB="two\\nlines"\nC=plain # trailing\n' },
    );
    const a = await readArtifact(dir);
    expect(a.cwd).toBe(path.join(dir, 'app', 'agent'));
    expect(a.env).toEqual({ A: '1', B: 'two\nlines', C: 'plain' });
    expect(a.warnings).toEqual([]);
  });

  it('takes env values given inline and warns about a missing env file', async () => {
    expect((await readArtifact(artifact('inline', { start: START, env: { K: 'v' } }))).env).toEqual({ K: 'v' });
    const missing = await readArtifact(artifact('missing', { start: START, env: '.env' }));
    expect(missing.env).toEqual({});
    expect(missing.warnings).toEqual([expect.stringContaining("Env file '.env'")]);
  });

  it('never follows an env file link out of the app (the build wrote it), but does inside it', async () => {
    const secret = path.join(root, 'control-plane-secret');
    writeFileSync(secret, 'KEY=control-plane-value\n');
    const dir = artifact('linked-env', { start: START, env: ['.env', '.env.local'] }, { 'agent/real.env': 'OK=1\n' });
    symlinkSync(secret, path.join(dir, 'app', 'agent', '.env'));
    symlinkSync('real.env', path.join(dir, 'app', 'agent', '.env.local'));
    const a = await readArtifact(dir);
    expect(a.env).toEqual({ OK: '1' });
    expect(a.warnings).toEqual(["Env file '.env' links outside the app; ignored."]);
  });

  it('rejects what cannot run: no manifest, no start command, a start directory outside app/', async () => {
    await expect(readArtifact(path.join(root, 'nothing'))).rejects.toBeInstanceOf(ArtifactError);
    await expect(readArtifact('relative/dir')).rejects.toThrow(/not an absolute directory/);
    await expect(readArtifact(artifact('nostart', { start: { command: '' } }))).rejects.toThrow(
      /no valid start command/,
    );
    await expect(readArtifact(artifact('escape', { start: { ...START, cwd: '../..' } }))).rejects.toThrow(
      /outside its app/,
    );
  });

  it('parses dotenv quoting', () => {
    expect(parseEnvFile(`X='single # kept'\nbad line\nY=`)).toEqual({ X: 'single # kept', Y: '' });
  });
});

describe('ports and logs', () => {
  it('skips taken and bound ports and reports an exhausted range', async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as { port: number }).port;
    try {
      const range = { host: '127.0.0.1', portMin: port, portMax: port + 1 };
      const free = await pickFreePort(range, new Set());
      expect(free === port + 1 || free === null).toBe(true);
      expect(await pickFreePort(range, new Set([port + 1]))).toBeNull();
      expect(await pickFreePort({ ...range, portMax: port }, new Set())).toBeNull();
    } finally {
      await new Promise((r) => busy.close(r));
    }
  });

  it('reads the last lines of a log file', async () => {
    const file = path.join(root, 'x.log');
    writeFileSync(file, Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\n') + '\n\n');
    expect(await lastLines(file, 3)).toEqual(['line 27', 'line 28', 'line 29']);
    expect(await lastLines(path.join(root, 'none.log'), 3)).toEqual([]);
  });
});
