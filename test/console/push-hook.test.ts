import { execFile, execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signatureValid } from '../../services/api/src/services/webhook.service.js';
import { localPushHook } from '../../services/console/app/ui/push-hook.js';

/**
 * The git hook a `local` integration's page shows (docs/console.md, Listeners and integrations):
 * run by git on a real commit, it signs the push as the api's webhook checks it, and its secret
 * is never an argument of any command it runs (`ps` shows those to every user of the machine).
 */

// What an integration's secret looks like (base64url), with a shell-quoting quote in it too.
const SECRET = "whsec-Zm9vYmFyYmF6cXV4'quoted_-0123456789";
/** The commands the hook runs by name: each stood in for by one that writes down its arguments. */
const LOGGED = ['perl', 'curl', 'sed', 'date', 'basename', 'cut', 'openssl', 'cat', 'env'];

describe('localPushHook', () => {
  let dir: string;
  let server: Server;
  let url: string;
  const received: Array<{ headers: IncomingHttpHeaders; body: Buffer }> = [];

  beforeAll(async () => {
    dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'slipway-push-hook-')));
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks) });
        res.setHeader('Content-Type', 'application/json');
        res.end('{"status_code":200,"outcome":"accepted"}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/integrations/repohost/x/webhook`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('keeps the secret out of every command line: it is only assigned, then handed to perl in its environment', () => {
    const hook = localPushHook('local', url, 'S3CRET-value_-x');
    const lines = hook.split('\n').filter((line) => line.includes('S3CRET-value_-x'));
    // Once, as the hook's own variable (an assignment is no process's argument).
    expect(lines).toEqual(["WEBHOOK_SECRET='S3CRET-value_-x'"]);
    // Used once: in perl's environment (an assignment before the command), read there as $ENV{…}.
    const uses = hook.split('\n').filter((line) => /\$WEBHOOK_SECRET|\$\{WEBHOOK_SECRET/.test(line));
    expect(uses).toHaveLength(1);
    expect(uses[0]).toMatch(/\| WEBHOOK_SECRET="\$WEBHOOK_SECRET" perl -MDigest::SHA=hmac_sha256_hex \\$/);
    expect(hook).toContain('$ENV{WEBHOOK_SECRET}');
    // Not exported (every command would get it) and no openssl -hmac <key>.
    expect(hook).not.toMatch(/export\s+WEBHOOK_SECRET|openssl|-hmac/);
  });

  it('signs a real commit as the api checks it, with no command seeing the secret in its arguments', async () => {
    // A stand-in for each command the hook runs, first on PATH: it logs its arguments, then runs the real one.
    const bin = path.join(dir, 'bin');
    const log = path.join(dir, 'argv.log');
    mkdirSync(bin);
    for (const name of LOGGED) {
      const real = execFileSync('sh', ['-c', `command -v ${name} || true`], { encoding: 'utf8' }).trim();
      if (!real) continue;
      writeFileSync(path.join(bin, name), `#!/bin/sh\nprintf '%s\\n' "${name} $*" >> '${log}'\nexec '${real}' "$@"\n`);
      chmodSync(path.join(bin, name), 0o755);
    }
    writeFileSync(log, '');

    const repo = path.join(dir, 'repo');
    // Not execFileSync: the hook's request is answered by this process's server, which must keep running.
    const git = async (...args: string[]) =>
      (
        await promisify(execFile)('git', ['-C', repo, ...args], {
          encoding: 'utf8',
          env: {
            ...process.env,
            PATH: `${bin}:${process.env.PATH}`,
            GIT_AUTHOR_NAME: 't',
            GIT_AUTHOR_EMAIL: 't@example.com',
            GIT_COMMITTER_NAME: 't',
            GIT_COMMITTER_EMAIL: 't@example.com',
          },
        })
      ).stdout;
    mkdirSync(repo);
    await git('init', '-q', '-b', 'main');
    writeFileSync(path.join(repo, '.git', 'hooks', 'post-commit'), localPushHook('local', url, SECRET), {
      mode: 0o755,
    });
    writeFileSync(path.join(repo, 'README.md'), 'hello\n');
    await git('add', 'README.md');
    await git('commit', '-q', '-m', 'first');
    const sha = (await git('rev-parse', 'HEAD')).trim();

    expect(received).toHaveLength(1);
    const [{ headers, body }] = received;
    expect(headers['content-type']).toBe('application/json');
    expect(headers['x-github-event']).toBe('push');
    const signature = headers['x-hub-signature-256'];
    expect(signature).toBe(`sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`);
    // The api's own check of a delivery takes it.
    expect(signatureValid(SECRET, body, signature as string)).toBe(true);
    expect(signatureValid('another secret', body, signature as string)).toBe(false);
    expect(JSON.parse(body.toString('utf8'))).toMatchObject({
      ref: 'refs/heads/main',
      after: sha,
      repository: { clone_url: `file://${repo}` },
    });

    // Every command the hook ran, with its arguments: perl signed, curl sent, none was given the secret.
    const argv = readFileSync(log, 'utf8');
    expect(argv).toMatch(/^perl -MDigest::SHA=hmac_sha256_hex -e /m);
    expect(argv).toMatch(/^curl -sS -X POST /m);
    expect(argv).not.toContain(SECRET);
    expect(argv).not.toContain('whsec-');
  });
});
