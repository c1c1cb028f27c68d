import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiKey } from '@slipway/db';
import { uploadFilePath } from '@slipway/source';
import { craftTarball, type CraftedEntry } from '../support/crafted-tarball.js';
import { createListener } from '../support/fixtures.js';
import { eventually } from '../support/service-process.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/** Not reachable: upload URLs are rewritten onto the test server, proving they are built on it. */
const PUBLIC_URL = 'http://slipway.test:8124/api-host';
const MAX_BYTES = 64 * 1024;
const INVALID = { detail: 'Invalid or expired upload URL.' };

let api: TestApi;

beforeAll(async () => {
  api = await startTestApi({ SLIPWAY_PUBLIC_URL: PUBLIC_URL, SLIPWAY_UPLOAD_MAX_BYTES: String(MAX_BYTES) });
});
afterAll(async () => {
  await api?.close();
});

/** A small source archive (.tar.gz), as the CLI's is. */
const tarball = (text = `source ${randomUUID()}`) =>
  craftTarball([
    { path: 'agent/langgraph.json', body: '{"graphs": {}}' },
    { path: 'agent/notes.txt', body: text.repeat(20) },
  ]);

/** The URL on this test server that `uploadUrl` (built on PUBLIC_URL) names. */
const local = (uploadUrl: string) => {
  expect(uploadUrl.startsWith(`${PUBLIC_URL}/v2/uploads/`), uploadUrl).toBe(true);
  return `${api.baseUrl}/api-host${uploadUrl.slice(PUBLIC_URL.length)}`;
};

/** PUT exactly as the published CLI does it: no API key, gzip type, length and GCS range headers. */
async function put(url: string, body: Buffer) {
  const res = await fetch(url, {
    method: 'PUT',
    headers: {
      'Content-Type': 'application/gzip',
      'Content-Length': String(body.length),
      'X-Goog-Content-Length-Range': '0,209715200',
    },
    body,
  });
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : undefined };
}

let seq = 0;
async function uploadDeployment(): Promise<{ id: string }> {
  const res = await api.http.post('/v2/deployments', {
    name: `up-${++seq}-${randomUUID().slice(0, 6)}`,
    source: 'internal_source',
    source_config: { deployment_type: 'dev' },
    source_revision_config: { langgraph_config_path: 'langgraph.json' },
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/** A self-hosted (image) deployment: not an upload deployment. */
async function imageDeployment(): Promise<{ id: string }> {
  const listenerId = await createListener(api, `up-${randomUUID().slice(0, 6)}`);
  const res = await api.http.post('/v2/deployments', {
    name: `up-image-${randomUUID().slice(0, 6)}`,
    source: 'external_container',
    source_config: { listener_id: listenerId },
    source_revision_config: { image_uri: 'registry.example/agent:1' },
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

async function uploadUrl(deploymentId: string): Promise<{ upload_url: string; object_path: string }> {
  const res = await api.http.post(`/v2/deployments/${deploymentId}/upload-url`);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

const uploadRow = async (objectPath: string) =>
  (
    await api.dataSource.query(
      `SELECT deployment_id, size_bytes, sha256, completed_at FROM uploads WHERE object_path = $1`,
      [objectPath],
    )
  )[0];

/** Every file under the deployment's upload directory (finished or partial). */
const filesOf = (deploymentId: string) => {
  const dir = path.join(api.config.dataDir, 'uploads', deploymentId);
  return existsSync(dir) ? readdirSync(dir) : [];
};

async function completedUpload(deploymentId: string) {
  const url = await uploadUrl(deploymentId);
  const res = await put(local(url.upload_url), tarball());
  expect(res.status, res.text).toBe(200);
  return url;
}

describe('create without a tarball (C10)', () => {
  it('creates the upload deployment without a revision', async () => {
    const d = await uploadDeployment();
    expect(d).toMatchObject({ source: 'upload', latest_revision_id: null, active_revision_id: null });
    expect(await api.dataSource.query(`SELECT id FROM revisions WHERE deployment_id = $1`, [d.id])).toEqual([]);
  });

  it('refuses a source_tarball_path at create: no upload of the deployment can exist yet', async () => {
    const res = await api.http.post('/v2/deployments', {
      name: 'up-guessed',
      source: 'internal_source',
      source_config: {},
      source_revision_config: { source_tarball_path: `uploads/${randomUUID()}/${randomUUID()}.tar.gz` },
    });
    expect(res.status, res.text).toBe(422);
    expect(res.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'source_revision_config', 'source_tarball_path'], type: 'value_error' }),
    ]);
    expect(await api.dataSource.query(`SELECT id FROM deployments WHERE name = 'up-guessed'`)).toEqual([]);
  });
});

describe('POST /v2/deployments/{id}/upload-url', () => {
  it('returns an absolute URL on the public URL and an opaque object path, and records the upload', async () => {
    const d = await uploadDeployment();
    const res = await api.http.post(`/v2/deployments/${d.id}/upload-url`);
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['object_path', 'upload_url']);
    expect(res.body.upload_url).toMatch(/^http:\/\/slipway\.test:8124\/api-host\/v2\/uploads\/[A-Za-z0-9_-]{40,}$/);
    expect(res.body.object_path).toMatch(new RegExp(`^uploads/${d.id}/[0-9a-f-]{36}\\.tar\\.gz$`));
    expect(await uploadRow(res.body.object_path)).toEqual({
      deployment_id: d.id,
      size_bytes: null,
      sha256: null,
      completed_at: null,
    });
    // Each call is a new object with its own URL.
    const again = await uploadUrl(d.id);
    expect(again.object_path).not.toBe(res.body.object_path);
    expect(again.upload_url).not.toBe(res.body.upload_url);
  });

  it('needs a key; a deployment of another source → 400; unknown or foreign deployment → 404', async () => {
    const d = await uploadDeployment();
    expect((await api.http.post(`/v2/deployments/${d.id}/upload-url`, undefined, { key: null })).status).toBe(401);

    const image = await imageDeployment();
    const wrong = await api.http.post(`/v2/deployments/${image.id}/upload-url`);
    expect(wrong.status).toBe(400);
    expect(wrong.body.detail).toBe(
      `Deployment ID ${image.id} has source external_container; upload URLs are only for upload (internal_source) deployments.`,
    );

    const missing = randomUUID();
    expect((await api.http.post(`/v2/deployments/${missing}/upload-url`)).body).toEqual({
      detail: `Deployment ID ${missing} not found.`,
    });

    const otherWorkspace = randomUUID();
    await api.dataSource.query(`INSERT INTO workspaces (id, organization_id, name) VALUES ($1, $2, 'uploads-other')`, [
      otherWorkspace,
      api.organizationId,
    ]);
    const { key } = await issueApiKey(api.dataSource.manager, {
      organizationId: api.organizationId,
      workspaceId: otherWorkspace,
      scope: 'workspace',
      role: 'admin',
    });
    const foreign = await api.http.as(key).post(`/v2/deployments/${d.id}/upload-url`);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ detail: `Deployment ID ${d.id} not found.` });
    expect(await api.dataSource.query(`SELECT object_path FROM uploads WHERE deployment_id = $1`, [d.id])).toEqual([]);
  });
});

describe('PUT /v2/uploads/{token}', () => {
  it('stores the tarball without an API key: file, size, sha256, completed_at; a second PUT → 409', async () => {
    const d = await uploadDeployment();
    const url = await uploadUrl(d.id);
    const body = tarball();
    const res = await put(local(url.upload_url), body);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({});

    const file = uploadFilePath(api.config.dataDir, url.object_path);
    expect(readFileSync(file).equals(body)).toBe(true);
    expect(filesOf(d.id)).toEqual([path.basename(file)]);
    const row = await uploadRow(url.object_path);
    expect(row).toMatchObject({
      size_bytes: String(body.length),
      sha256: createHash('sha256').update(body).digest('hex'),
    });
    expect(row.completed_at).toBeInstanceOf(Date);

    const again = await put(local(url.upload_url), tarball('other'));
    expect(again.status).toBe(409);
    expect(again.body.detail).toMatch(/already complete/);
    expect(readFileSync(file).equals(body)).toBe(true);
    // The token is a credential: the request log shows the route, not the token.
    const token = url.upload_url.split('/').pop()!;
    expect(api.logs.text()).toContain('/v2/uploads/<token>');
    expect(api.logs.text()).not.toContain(token);
  });

  it('is served without the /api-host prefix too, and only for PUT', async () => {
    const d = await uploadDeployment();
    const url = await uploadUrl(d.id);
    const plain = `${api.baseUrl}${url.upload_url.slice(PUBLIC_URL.length)}`;
    const post = await fetch(plain, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('PUT');
    expect((await put(plain, tarball())).status).toBe(200);
  });

  it('a tampered, truncated or made-up token → 401 and nothing is stored', async () => {
    const d = await uploadDeployment();
    const url = await uploadUrl(d.id);
    const token = url.upload_url.split('/').pop()!;
    const base = local(url.upload_url).slice(0, -token.length);
    // Flip one character in the middle (ids) and at the end (MAC): either breaks the signature.
    const flip = (t: string, i: number) => t.slice(0, i) + (t[i] === 'A' ? 'B' : 'A') + t.slice(i + 1);
    for (const bad of [
      flip(token, 10),
      flip(token, token.length - 2),
      token.slice(0, -4),
      `${token}AAAA`,
      'abc',
      '!!!',
    ]) {
      const res = await put(base + encodeURIComponent(bad), tarball());
      expect(res.status, bad).toBe(401);
      expect(res.body).toEqual(INVALID);
    }
    expect(filesOf(d.id)).toEqual([]);
    expect((await uploadRow(url.object_path)).completed_at).toBeNull();
    // The genuine token still works afterwards.
    expect((await put(local(url.upload_url), tarball())).status).toBe(200);
  });

  it('a body over the limit by Content-Length → 413 before reading; nothing left on disk; the URL stays usable', async () => {
    const d = await uploadDeployment();
    const url = await uploadUrl(d.id);
    const big = Buffer.concat([Buffer.from([0x1f, 0x8b]), Buffer.alloc(MAX_BYTES + 1)]);
    const res = await put(local(url.upload_url), big);
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ detail: `The upload is larger than the limit of ${MAX_BYTES} bytes.` });
    expect(filesOf(d.id)).toEqual([]);
    expect((await uploadRow(url.object_path)).completed_at).toBeNull();
    expect((await put(local(url.upload_url), tarball())).status).toBe(200);
  });

  it('a chunked body that grows over the limit → 413 while streaming, and the partial file is deleted', async () => {
    const d = await uploadDeployment();
    const url = await uploadUrl(d.id);
    const res = await rawPut(local(url.upload_url), async (req) => {
      req.write(Buffer.from([0x1f, 0x8b]));
      for (let sent = 0; sent <= MAX_BYTES * 2 && !req.destroyed; sent += 8192) {
        if (!req.write(Buffer.alloc(8192))) await new Promise((r) => req.once('drain', r).once('close', r));
      }
      req.end();
    });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.text)).toEqual({ detail: `The upload is larger than the limit of ${MAX_BYTES} bytes.` });
    await eventually(
      async () => filesOf(d.id),
      (files) => files.length === 0,
      5_000,
    );
    expect((await uploadRow(url.object_path)).completed_at).toBeNull();
  });

  it('not gzip, or empty → 400 and nothing kept', async () => {
    const d = await uploadDeployment();
    const url = await uploadUrl(d.id);
    const notGzip = await put(local(url.upload_url), Buffer.from('PK\u0003\u0004 a zip, not a tarball'));
    expect(notGzip.status).toBe(400);
    expect(notGzip.body).toEqual({ detail: 'The upload is not gzip data; PUT the source as a .tar.gz archive.' });
    expect((await put(local(url.upload_url), Buffer.alloc(0))).status).toBe(400);
    expect((await put(local(url.upload_url), Buffer.from([0x1f]))).status).toBe(400);
    expect(filesOf(d.id)).toEqual([]);
    expect((await uploadRow(url.object_path)).completed_at).toBeNull();
  });

  it.each([
    [
      'a symlink escape through another link (up -> ., esc -> up/..)',
      [
        { path: 'up', type: 'SymbolicLink', linkpath: '.' },
        { path: 'esc', type: 'SymbolicLink', linkpath: 'up/..' },
      ],
      "symlink 'esc' points outside the archive (up/..)",
    ],
    [
      'an absolute name',
      [{ path: '/etc/cron.d/evil', body: '* * * * * root sh' }],
      "'/etc/cron.d/evil' points outside its directory",
    ],
    ['a .. name', [{ path: 'agent/../../evil.sh', body: 'x' }], "'agent/../../evil.sh' points outside its directory"],
    [
      'a hard link to a host file',
      [{ path: 'agent/passwd', type: 'Link', linkpath: '/etc/passwd' }],
      "hard link 'agent/passwd' does not point to a file of the archive (/etc/passwd)",
    ],
    [
      'a device',
      [{ path: 'agent/null', type: 'CharacterDevice' }],
      "'agent/null' is a character device; only files, directories and links are allowed",
    ],
  ] as Array<[string, CraftedEntry[], string]>)(
    'an archive with %s → 400 naming the entry, nothing kept, the URL stays usable',
    async (_case, entries, problem) => {
      const d = await uploadDeployment();
      const url = await uploadUrl(d.id);
      const res = await put(
        local(url.upload_url),
        craftTarball([{ path: 'agent/langgraph.json', body: '{}' }, ...entries]),
      );
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ detail: `The source tarball was refused: ${problem}.` });
      expect(filesOf(d.id)).toEqual([]);
      expect((await uploadRow(url.object_path)).completed_at).toBeNull();
      expect((await put(local(url.upload_url), tarball())).status).toBe(200);
    },
  );

  it('gzip data that is not a tar archive → 400', async () => {
    const d = await uploadDeployment();
    const url = await uploadUrl(d.id);
    const res = await put(local(url.upload_url), gzipSync(Buffer.from('plain text, not a tar archive\n'.repeat(40))));
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/^The source tarball is not a valid \.tar\.gz archive/);
    expect(filesOf(d.id)).toEqual([]);
  });

  it('a second PUT while the first is streaming → 409; the first completes', async () => {
    const d = await uploadDeployment();
    const url = await uploadUrl(d.id);
    const body = tarball('slow');
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const first = rawPut(local(url.upload_url), async (req) => {
      req.write(body.subarray(0, 10));
      await released;
      req.end(body.subarray(10));
    });
    await eventually(
      async () => filesOf(d.id),
      (files) => files.some((f) => f.endsWith('.part')),
      5_000,
    );
    const second = await put(local(url.upload_url), tarball('racer'));
    expect(second.status).toBe(409);
    expect(second.body.detail).toBe('An upload to this URL is already in progress.');
    release();
    expect((await first).status).toBe(200);
    expect(readFileSync(uploadFilePath(api.config.dataDir, url.object_path)).equals(body)).toBe(true);
  });

  it('a client that disconnects mid-upload leaves no partial file, and the URL can be retried', async () => {
    const d = await uploadDeployment();
    const url = await uploadUrl(d.id);
    const req = http.request(local(url.upload_url), {
      method: 'PUT',
      headers: { 'Content-Type': 'application/gzip', 'Content-Length': '60000' },
    });
    req.on('error', () => undefined);
    req.write(Buffer.concat([Buffer.from([0x1f, 0x8b]), Buffer.alloc(1000)]));
    await eventually(
      async () => filesOf(d.id),
      (files) => files.some((f) => f.endsWith('.part')),
      5_000,
    );
    req.destroy();
    await eventually(
      async () => filesOf(d.id),
      (files) => files.length === 0,
      5_000,
    );
    expect((await uploadRow(url.object_path)).completed_at).toBeNull();
    expect((await put(local(url.upload_url), tarball())).status).toBe(200);
  });
});

describe('expiry', () => {
  let shortLived: TestApi;
  beforeAll(async () => {
    shortLived = await startTestApi({ SLIPWAY_UPLOAD_URL_TTL_MS: '300' });
  });
  afterAll(async () => {
    await shortLived?.close();
  });

  it('an expired upload URL → 401', async () => {
    const d = await shortLived.http.post('/v2/deployments', {
      name: 'up-expiring',
      source: 'upload',
      source_config: {},
      source_revision_config: {},
    });
    const url = (await shortLived.http.post(`/v2/deployments/${d.body.id}/upload-url`)).body;
    // PORT is 0 here, so the public URL names no real port: use the path on the test server.
    const target = `${shortLived.baseUrl}${new URL(url.upload_url).pathname}`;
    await new Promise((r) => setTimeout(r, 400));
    const res = await put(target, tarball());
    expect(res.status).toBe(401);
    expect(res.body).toEqual(INVALID);
    const [row] = await shortLived.dataSource.query(`SELECT completed_at FROM uploads WHERE object_path = $1`, [
      url.object_path,
    ]);
    expect(row.completed_at).toBeNull();
  });
});

describe('PATCH with revision_source internal_source', () => {
  const patch = (id: string, objectPath: string) =>
    api.http.patch(`/v2/deployments/${id}`, {
      revision_source: 'internal_source',
      source_revision_config: { source_tarball_path: objectPath, langgraph_config_path: 'agent/langgraph.json' },
    });
  const notFound = (id: string, objectPath: string) => ({
    detail: `Upload ${objectPath} not found for this deployment; request one with POST /v2/deployments/${id}/upload-url.`,
  });
  const revisionCount = async (id: string) =>
    (await api.dataSource.query(`SELECT id FROM revisions WHERE deployment_id = $1`, [id])).length;

  it('an unknown, unfinished or foreign object path → 400, and no revision', async () => {
    const d = await uploadDeployment();
    const other = await uploadDeployment();
    const unknown = `uploads/${d.id}/${randomUUID()}.tar.gz`;
    const unfinished = (await uploadUrl(d.id)).object_path;
    const foreign = (await completedUpload(other.id)).object_path;
    for (const objectPath of [unknown, unfinished, foreign, '../../etc/passwd']) {
      const res = await patch(d.id, objectPath);
      expect(res.status, objectPath).toBe(400);
      expect(res.body).toEqual(notFound(d.id, objectPath));
    }
    expect(await revisionCount(d.id)).toBe(0);
    expect((await api.http.get(`/v2/deployments/${d.id}`)).body.latest_revision_id).toBeNull();
  });

  it('a completed upload of this deployment → a new revision built from it', async () => {
    const d = await uploadDeployment();
    const { object_path } = await completedUpload(d.id);
    const res = await patch(d.id, object_path);
    expect(res.status, res.text).toBe(200);
    expect(res.body.latest_revision_id).toEqual(expect.any(String));
    expect(res.body.source_revision_config).toMatchObject({
      source_tarball_path: object_path,
      graph_config_path: 'agent/langgraph.json',
    });
    const revision = await api.http.get(`/v2/deployments/${d.id}/revisions/${res.body.latest_revision_id}`);
    expect(revision.body).toMatchObject({
      source: 'upload',
      source_revision_config: { source_tarball_path: object_path, graph_config_path: 'agent/langgraph.json' },
    });
    expect(await revisionCount(d.id)).toBe(1);
  });

  it('also checks a tarball path given without revision_source', async () => {
    const d = await uploadDeployment();
    const objectPath = `uploads/${d.id}/${randomUUID()}.tar.gz`;
    const res = await api.http.patch(`/v2/deployments/${d.id}`, {
      source_revision_config: { source_tarball_path: objectPath },
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(notFound(d.id, objectPath));
  });

  it('another source of deployment cannot be pointed at an upload', async () => {
    const image = await imageDeployment();
    const { object_path } = await completedUpload((await uploadDeployment()).id);
    const res = await patch(image.id, object_path);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(notFound(image.id, object_path));
  });
});

describe('object paths resolve only inside the data dir', () => {
  it('rejects anything but an issued object path', () => {
    const dataDir = '/srv/slipway';
    const id = randomUUID();
    const good = `uploads/${id}/${randomUUID()}.tar.gz`;
    expect(uploadFilePath(dataDir, good)).toBe(path.join(dataDir, good));
    for (const bad of [
      '../etc/passwd',
      `/uploads/${id}/x.tar.gz`,
      `uploads/${id}/../../secrets.key`,
      `uploads/${id}/${id}.tar.gz/..`,
      `uploads/x/${id}.tar.gz`,
      '',
    ]) {
      expect(() => uploadFilePath(dataDir, bad), bad).toThrow();
    }
  });
});

/**
 * A PUT over node:http so the test controls the body as it streams (chunked, slow, cut off);
 * resolves with the response even when the server answers before the body is finished.
 */
function rawPut(
  url: string,
  send: (req: http.ClientRequest) => Promise<void>,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/gzip', 'Transfer-Encoding': 'chunked' },
    });
    const timer = setTimeout(() => reject(new Error('no response within 10 s')), 10_000);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode!, text: Buffer.concat(chunks).toString() });
      });
    });
    // Writing after the server answered and closed is expected here; only a missing answer fails.
    req.on('error', () => undefined);
    send(req).catch(() => undefined);
  });
}
