/**
 * The registry's push guard (docs/operations.md, The registry-bytes quota): a reverse proxy on
 * the registry's address in front of distribution (which listens on a unix socket only it can
 * reach), refusing the bytes of a push that would take its workspace past `registry_bytes`.
 * distribution cannot refuse a push by size and the token endpoint only decides once a minute,
 * so the count happens here, as the bytes stream, before they reach the registry's disk.
 * Everything else (pulls, catalog, token challenges) is piped through untouched, unbuffered.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { QUOTA_FIELDS } from '@slipway/domain';
import { deploymentOfRepository } from './repositories.js';

/** What the `registry_bytes` quota decides by (RegistryRepository.registryRoom). */
export interface RegistryRoom {
  quotaBytes: number;
  usedBytes: number;
  /** Of the digests asked about, those the workspace's counted blobs already hold. */
  recordedDigests: readonly string[];
}

/** Where the guard reads quotas and usage (Postgres, in `npm start`). */
export interface RoomSource {
  workspaceOf(deploymentId: string): Promise<string | null>;
  room(workspaceId: string, digests: readonly string[]): Promise<RegistryRoom>;
}

/** How long a room read is reused: a push checks every chunk, Postgres is asked at most this often per workspace. */
const ROOM_TTL_MS = 2_000;
/** An upload nobody touched for this long is abandoned: its bytes stop counting (distribution purges it within 24 h). */
const SESSION_IDLE_MS = 60 * 60_000;
/**
 * A finished blob counts as pending until its push event shows in `registry_blobs` (the room
 * read says so by digest), or for this long at most (an event that never came: a deleted deployment).
 */
const RECENT_MAX_MS = 10 * 60_000;
/** After a refusal, the rest of the request body is read and dropped for this long, so the client reads the 403 rather than a reset. */
const DRAIN_MS = 5_000;

const UPLOAD = /^\/v2\/(.+)\/blobs\/uploads\/([^/]*)$/;
const MANIFEST = /^\/v2\/(.+)\/manifests\/[^/]+$/;
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'upgrade', 'te', 'trailer'];

type Kind = 'start' | 'chunk' | 'finish' | 'manifest';

/** Which upload request this is, and of which repository; null for anything else. */
export function uploadRequest(
  method: string,
  pathname: string,
): { kind: Kind; repository: string; uuid: string | null } | null {
  const upload = UPLOAD.exec(pathname);
  if (upload) {
    const uuid = upload[2] || null;
    if (method === 'POST' && !uuid) return { kind: 'start', repository: upload[1]!, uuid: null };
    if (method === 'PATCH' && uuid) return { kind: 'chunk', repository: upload[1]!, uuid };
    if (method === 'PUT' && uuid) return { kind: 'finish', repository: upload[1]!, uuid };
    return null;
  }
  const manifest = MANIFEST.exec(pathname);
  return manifest && method === 'PUT' ? { kind: 'manifest', repository: manifest[1]!, uuid: null } : null;
}

/** distribution's error body, which docker and skopeo print. */
const registryError = (code: string, message: string) => JSON.stringify({ errors: [{ code, message, detail: null }] });

/**
 * Bytes of pushes the registry holds but `registry_bytes` does not count yet, per workspace:
 * requests streaming now, unfinished uploads (by their uuid), and finished blobs whose push
 * event is not recorded yet. Shared by every request of the guard, so concurrent uploads of one
 * workspace take from the same room.
 */
export class PushLedger {
  private readonly streaming = new Map<string, number>();
  private readonly sessions = new Map<string, { workspaceId: string; bytes: number; touchedAt: number }>();
  private readonly recent = new Map<string, { workspaceId: string; digest: string; bytes: number; at: number }>();

  pending(workspaceId: string, now = Date.now()): number {
    let total = this.streaming.get(workspaceId) ?? 0;
    for (const [uuid, s] of this.sessions) {
      if (now - s.touchedAt > SESSION_IDLE_MS) this.sessions.delete(uuid);
      else if (s.workspaceId === workspaceId) total += s.bytes;
    }
    for (const [key, r] of this.recent) {
      if (now - r.at > RECENT_MAX_MS) this.recent.delete(key);
      else if (r.workspaceId === workspaceId) total += r.bytes;
    }
    return total;
  }

  stream(workspaceId: string, delta: number): void {
    const next = (this.streaming.get(workspaceId) ?? 0) + delta;
    if (next > 0) this.streaming.set(workspaceId, next);
    else this.streaming.delete(workspaceId);
  }

  sessionBytes(uuid: string): number {
    return this.sessions.get(uuid)?.bytes ?? 0;
  }

  setSession(uuid: string, workspaceId: string, bytes: number): void {
    this.sessions.set(uuid, { workspaceId, bytes, touchedAt: Date.now() });
  }

  dropSession(uuid: string): void {
    this.sessions.delete(uuid);
  }

  finished(workspaceId: string, digest: string | null, bytes: number): void {
    if (!digest || bytes <= 0) return;
    this.recent.set(`${workspaceId} ${digest}`, { workspaceId, digest, bytes, at: Date.now() });
  }

  /** Digests finished in the workspace whose events may still be on their way. */
  recentDigests(workspaceId: string): string[] {
    return [...this.recent.values()].filter((r) => r.workspaceId === workspaceId).map((r) => r.digest);
  }

  /** Their push events are recorded: `registry_bytes` counts them now. */
  recorded(workspaceId: string, digests: readonly string[]): void {
    for (const digest of digests) this.recent.delete(`${workspaceId} ${digest}`);
  }
}

export interface PushGuard {
  server: http.Server;
  ledger: PushLedger;
  close: () => Promise<void>;
}

export interface PushGuardOptions {
  host: string;
  port: number;
  /** distribution's unix socket (`npm start`)... */
  backendSocket?: string;
  /** ...or its TCP address (`slipway registry-guard`, SLIPWAY_REGISTRY_UPSTREAM_URL), e.g. `http://127.0.0.1:5001`. */
  backendUrl?: string;
  rooms: RoomSource;
  log?: (msg: string) => void;
}

/** Where requests go: distribution's socket, or its host and port. */
export function backendOf(
  options: Pick<PushGuardOptions, 'backendSocket' | 'backendUrl'>,
): { socketPath: string } | { host: string; port: number } {
  if (options.backendSocket) return { socketPath: options.backendSocket };
  if (!options.backendUrl) throw new Error("the push guard needs distribution's socket or URL");
  const url = new URL(options.backendUrl);
  if (url.protocol !== 'http:')
    throw new Error(`the push guard forwards over plain http, not ${url.protocol} (${options.backendUrl})`);
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 80) };
}

/** Starts the guard on `host:port`; resolves once it listens (rejects if the address is taken). */
export async function startPushGuard(options: PushGuardOptions): Promise<PushGuard> {
  const { rooms } = options;
  const backend = backendOf(options);
  const log = options.log ?? (() => undefined);
  const ledger = new PushLedger();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const workspaces = new Map<string, string>();
  const roomCache = new Map<string, { at: number; room: Promise<{ quotaBytes: number; usedBytes: number }> }>();

  const workspaceOf = async (deploymentId: string): Promise<string | null> => {
    const known = workspaces.get(deploymentId);
    if (known) return known;
    const found = await rooms.workspaceOf(deploymentId);
    if (found) {
      if (workspaces.size > 10_000) workspaces.clear();
      workspaces.set(deploymentId, found);
    }
    return found;
  };
  const roomOf = (workspaceId: string) => {
    const cached = roomCache.get(workspaceId);
    if (cached && Date.now() - cached.at < ROOM_TTL_MS) return cached.room;
    const room = rooms.room(workspaceId, ledger.recentDigests(workspaceId)).then((r) => {
      ledger.recorded(workspaceId, r.recordedDigests);
      return { quotaBytes: r.quotaBytes, usedBytes: r.usedBytes };
    });
    roomCache.set(workspaceId, { at: Date.now(), room });
    room.catch(() => roomCache.delete(workspaceId));
    return room;
  };

  const forwardHeaders = (req: IncomingMessage) => {
    const headers = { ...req.headers };
    for (const h of HOP_BY_HOP) delete headers[h];
    return headers;
  };
  const upstream = (req: IncomingMessage, onResponse: (res: IncomingMessage) => void) =>
    http.request({ agent, ...backend, method: req.method, path: req.url, headers: forwardHeaders(req) }, onResponse);
  const answer = (res: ServerResponse, up: IncomingMessage) => {
    const headers = { ...up.headers };
    for (const h of HOP_BY_HOP) delete headers[h];
    res.writeHead(up.statusCode ?? 502, up.statusMessage, headers);
    up.pipe(res);
  };
  const unavailable = (res: ServerResponse, err: Error) => {
    if (res.headersSent) return void res.destroy(err);
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '5' });
    res.end(registryError('UNAVAILABLE', `the image registry is restarting; retry (${err.message})`));
  };
  /**
   * Answers 403 DENIED without forwarding another byte. The rest of the body is read and dropped
   * first (for at most DRAIN_MS): answering and closing while the client still writes would reset
   * the connection, and the client would report a broken pipe instead of this answer.
   */
  const deny = (req: IncomingMessage, res: ServerResponse, message: string) => {
    const answer = () => {
      if (res.headersSent) return;
      res.writeHead(403, { 'content-type': 'application/json', connection: 'close' });
      res.end(registryError('DENIED', message));
    };
    if (req.complete) return answer();
    req.resume();
    const timer = setTimeout(() => {
      answer();
      // A client still sending after the drain period is cut off.
      setTimeout(() => req.socket.destroy(), 1_000).unref();
    }, DRAIN_MS);
    timer.unref();
    req.once('end', () => {
      clearTimeout(timer);
      answer();
    });
  };

  const passThrough = (req: IncomingMessage, res: ServerResponse) => {
    const up = upstream(req, (r) => answer(res, r));
    up.on('error', (err) => unavailable(res, err));
    req.pipe(up);
  };

  const guard = async (
    req: IncomingMessage,
    res: ServerResponse,
    kind: Kind,
    workspaceId: string,
    uuid: string | null,
  ) => {
    const { quotaBytes, usedBytes } = await roomOf(workspaceId);
    const quotaMessage = (incoming: number) =>
      `Quota exceeded: this push would take the workspace's images past ${quotaBytes} bytes: ${usedBytes} stored and unpacked, ` +
      `${ledger.pending(workspaceId)} in pushes under way, ${incoming} more in this request ` +
      `(quota ${QUOTA_FIELDS.registryBytes} = ${quotaBytes} for this workspace).`;
    const room = () => quotaBytes - usedBytes - ledger.pending(workspaceId);
    if (kind === 'start' && room() <= 0) return deny(req, res, quotaMessage(0));
    const declared = Number(req.headers['content-length'] ?? NaN);
    let reserved = 0;
    if (Number.isSafeInteger(declared) && declared > 0) {
      if (declared > room()) {
        if (uuid) cancelUpload(req);
        return deny(req, res, quotaMessage(declared));
      }
      reserved = declared;
      ledger.stream(workspaceId, reserved);
    }
    let streamed = 0;
    let settled = false;
    let refused = false;
    const release = () => {
      if (settled) return false;
      settled = true;
      ledger.stream(workspaceId, -reserved);
      return true;
    };
    const up = upstream(req, (r) => {
      const status = r.statusCode ?? 0;
      if (release() && status >= 200 && status < 300) {
        const digest =
          typeof r.headers['docker-content-digest'] === 'string' ? r.headers['docker-content-digest'] : null;
        const id =
          uuid ?? (typeof r.headers['docker-upload-uuid'] === 'string' ? r.headers['docker-upload-uuid'] : null);
        if (kind === 'manifest' || status === 201) {
          // Finished: a manifest, a blob (PUT, or a monolithic POST); what its upload held moves with it.
          ledger.finished(workspaceId, digest, (uuid ? ledger.sessionBytes(uuid) : 0) + streamed);
          if (uuid) ledger.dropSession(uuid);
        } else if (id) {
          // distribution's `Range: 0-<last>` is what the upload holds now, whatever a retried chunk re-sent.
          // (`0-0` is both empty and one byte.)
          const range = /^0-(\d+)$/.exec(String(r.headers.range ?? ''));
          ledger.setSession(
            id,
            workspaceId,
            range && range[1] !== '0' ? Number(range[1]) + 1 : ledger.sessionBytes(id) + streamed,
          );
        }
      }
      answer(res, r);
    });
    up.on('error', (err) => {
      release();
      if (!refused) unavailable(res, err);
    });
    req.on('data', (chunk: Buffer) => {
      if (refused) return;
      streamed += chunk.length;
      if (streamed > reserved) {
        const extra = streamed - reserved;
        if (extra > room()) {
          refused = true;
          release();
          up.destroy();
          log(
            `refused a push to ${req.url?.split('?')[0]} of workspace ${workspaceId} over its registry_bytes quota (${quotaBytes} bytes)`,
          );
          if (uuid) cancelUpload(req);
          return deny(req, res, quotaMessage(streamed));
        }
        reserved = streamed;
        ledger.stream(workspaceId, extra);
      }
      if (!up.write(chunk)) req.pause();
    });
    up.on('drain', () => !refused && req.resume());
    req.on('end', () => !refused && up.end());
    req.on('aborted', () => {
      release();
      up.destroy();
    });
    // Paused while the workspace was looked up: a 'data' listener alone does not resume it.
    req.resume();
  };

  /** The refused upload is cancelled at the registry, so what it held does not wait 24 h for the purge. */
  const cancelUpload = (req: IncomingMessage) => {
    const cancel = http.request(
      {
        agent,
        ...backend,
        method: 'DELETE',
        path: req.url,
        headers: { host: req.headers.host, authorization: req.headers.authorization },
      },
      (r) => {
        r.resume();
        const uuid = uploadRequest('PATCH', new URL(req.url ?? '/', 'http://x').pathname)?.uuid;
        if (uuid) ledger.dropSession(uuid);
      },
    );
    cancel.on('error', () => undefined);
    cancel.end();
  };

  const server = http.createServer((req, res) => {
    const fail = (err: Error) => {
      unavailable(res, err);
      req.resume();
    };
    try {
      const pathname = new URL(req.url ?? '/', 'http://registry').pathname;
      const upload = uploadRequest(req.method ?? 'GET', pathname);
      if (req.method === 'DELETE') {
        const cancelled = UPLOAD.exec(pathname)?.[2];
        if (cancelled) ledger.dropSession(cancelled);
      }
      // Without a token distribution answers 401 and stores nothing; a repository no Slipway
      // token can grant push to is refused there too.
      const deploymentId = upload && req.headers.authorization ? deploymentOfRepository(upload.repository) : null;
      if (!upload || !deploymentId) return passThrough(req, res);
      req.pause();
      workspaceOf(deploymentId)
        .then((workspaceId) => {
          if (!workspaceId) return passThrough(req, res);
          return guard(req, res, upload.kind, workspaceId, upload.uuid);
        }, fail)
        .catch(fail);
    } catch (err) {
      fail(err as Error);
    }
  });
  // Blob uploads may take long; distribution has no such deadline either. Headers must come quickly.
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    server,
    ledger,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
