/**
 * A GitHub stand-in for e2e tests (no GitHub can exist on this machine): one HTTP server that
 * serves the REST routes Slipway's `github` provider calls — `GET /user/repos`, commit statuses,
 * issue comments, `GET /repos/{o}/{r}/pulls/{n}` — recording every call, and the repositories
 * themselves over git's smart HTTP (`git http-backend`, as a real git host does), from bare
 * repositories under a directory of its own.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface ForgeCall {
  method: string;
  path: string;
  body: any;
}

export interface ForgeStandIn {
  /** `http://127.0.0.1:<port>`: the integration's `api_url`. */
  url: string;
  /** Where bare repositories live: `<root>/<owner>/<name>.git`, cloned at `<url>/<owner>/<name>.git`. */
  root: string;
  calls: ForgeCall[];
  /** Comments by id, as the stand-in keeps them (edited in place). */
  comments: Map<number, { issue: number; body: string }>;
  /** The state `GET …/pulls/{n}` answers. */
  pullStates: Map<number, 'open' | 'closed'>;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
  });
}

/** `repos`: `owner/name` of each repository /user/repos lists (their bare repositories are the caller's to make under `root`). */
export async function startForgeStandIn(repos: string[]): Promise<ForgeStandIn> {
  const root = mkdtempSync(path.join(tmpdir(), 'slipway-forge-'));
  const calls: ForgeCall[] = [];
  const comments = new Map<number, { issue: number; body: string }>();
  const pullStates = new Map<number, 'open' | 'closed'>();
  let nextComment = 1;
  let url = '';

  const server: Server = createServer(async (req, res) => {
    const [pathname, query = ''] = (req.url ?? '/').split('?');
    const json = (status: number, value: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    // git smart HTTP: handed to git http-backend (CGI), body streamed both ways.
    if (/^\/[\w.-]+\/[\w.-]+\.git\//.test(pathname!)) {
      calls.push({ method: req.method!, path: pathname!, body: null });
      const cgi = spawn('git', ['http-backend'], {
        env: {
          PATH: process.env.PATH ?? '',
          GIT_PROJECT_ROOT: root,
          GIT_HTTP_EXPORT_ALL: '1',
          PATH_INFO: pathname,
          QUERY_STRING: query,
          REQUEST_METHOD: req.method,
          CONTENT_TYPE: req.headers['content-type'] ?? '',
          ...(req.headers['content-encoding']
            ? { HTTP_CONTENT_ENCODING: String(req.headers['content-encoding']) }
            : {}),
          ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
          REMOTE_ADDR: req.socket.remoteAddress ?? '',
        },
        stdio: ['pipe', 'pipe', 'ignore'],
      });
      req.pipe(cgi.stdin);
      let head = Buffer.alloc(0);
      let started = false;
      cgi.stdout.on('data', (chunk: Buffer) => {
        if (started) return void res.write(chunk);
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        started = true;
        const headers: Record<string, string> = {};
        let status = 200;
        for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
          const at = line.indexOf(':');
          const name = line.slice(0, at).trim();
          const value = line.slice(at + 1).trim();
          if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
          else headers[name] = value;
        }
        res.writeHead(status, headers);
        res.write(head.subarray(end + 4));
      });
      cgi.stdout.on('end', () => res.end());
      return;
    }
    const raw = await readBody(req);
    const body = raw.length ? JSON.parse(raw.toString()) : null;
    calls.push({ method: req.method!, path: pathname!, body });
    if (pathname === '/user/repos') {
      return json(
        200,
        repos.map((full, i) => ({
          id: i + 1,
          name: full.split('/')[1],
          owner: { login: full.split('/')[0] },
          clone_url: `${url}/${full}.git`,
          default_branch: 'main',
        })),
      );
    }
    let m: RegExpExecArray | null;
    if (req.method === 'POST' && /^\/repos\/[\w.-]+\/[\w.-]+\/statuses\/[0-9a-f]+$/.test(pathname!))
      return json(201, { id: calls.length });
    if ((m = /^\/repos\/[\w.-]+\/[\w.-]+\/issues\/(\d+)\/comments$/.exec(pathname!))) {
      const issue = Number(m[1]);
      if (req.method === 'GET')
        return json(
          200,
          [...comments].filter(([, c]) => c.issue === issue).map(([id, c]) => ({ id, body: c.body })),
        );
      const id = nextComment++;
      comments.set(id, { issue, body: body.body });
      return json(201, { id, body: body.body });
    }
    if (req.method === 'PATCH' && (m = /^\/repos\/[\w.-]+\/[\w.-]+\/issues\/comments\/(\d+)$/.exec(pathname!))) {
      const comment = comments.get(Number(m[1]));
      if (!comment) return json(404, { message: 'Not Found' });
      comment.body = body.body;
      return json(200, { id: Number(m[1]), body: comment.body });
    }
    if ((m = /^\/repos\/[\w.-]+\/[\w.-]+\/pulls\/(\d+)$/.exec(pathname!)))
      return json(200, { number: Number(m[1]), state: pullStates.get(Number(m[1])) ?? 'open' });
    json(404, { message: 'Not Found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    root,
    calls,
    comments,
    pullStates,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      rmSync(root, { recursive: true, force: true });
    },
  };
}
