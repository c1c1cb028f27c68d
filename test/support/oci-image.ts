import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import * as tar from 'tar';

/**
 * A container image built without pulling anything: an OCI image layout assembled from
 * Debian's busybox-static (its `httpd` serves `/www` on $PORT, 8080 without, with `/ok` and a
 * CGI `/cgi-bin/whoami` that reports the uid, capabilities and what it can see), one gzipped
 * tar layer, written reproducibly (fixed times and owners, sorted entries), so the same `page`
 * and options give the same digest.
 */
export interface OciImage {
  /** The layout directory (`oci:<dir>:latest` for skopeo). */
  dir: string;
  manifestDigest: string;
  cleanup: () => void;
}

const sha256 = (data: Buffer) => `sha256:${createHash('sha256').update(data).digest('hex')}`;
const BUSYBOX = '/bin/busybox';

export interface BusyboxImageOptions {
  /** The image config's Entrypoint and Cmd (default: no Entrypoint, httpd as Cmd; null: none). */
  entrypoint?: string[] | null;
  cmd?: string[] | null;
  architecture?: string;
  env?: string[];
  workingDir?: string;
  /** The image config's `User` (`uid`, `uid:gid` or a name; default: none). */
  user?: string;
  /** The image config's `Labels`. */
  labels?: Record<string, string>;
  /** More files of the image, by absolute path. */
  files?: Record<string, { data: string | Buffer; mode: number }>;
}

/** httpd in the foreground on $PORT (8080 without), serving /www. */
export const HTTPD_CMD = ['/bin/busybox', 'sh', '-c', 'exec /bin/busybox httpd -f -p "${PORT:-8080}" -h /www'];

/** A CGI script: who the server runs as and what it sees of the machine. */
const WHOAMI = `#!/bin/sh
printf 'Content-Type: text/plain\\r\\n\\r\\n'
echo "uid=$(id -u) gid=$(id -g) groups=$(id -G)"
grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status
echo "run: $(ls -A /run /var/run 2>&1 | tr '\n' ' ')"
echo "sockets: $(find / -xdev -type s 2>/dev/null | tr '\n' ' ')"
echo "rootfs-writable: $(touch /bin/x 2>/dev/null && echo yes || echo no)"
echo "tmp-writable: $(touch /tmp/x 2>/dev/null && echo yes || echo no)"
echo "host-postgres: $(nc -w 2 127.0.0.1 5432 </dev/null >/dev/null 2>&1 && echo open || echo closed)"
tr '\\0' '\\n' </proc/1/environ | sed 's/=.*//' | sort | tr '\\n' ' ' | sed 's/^/env: /'
echo
# The trace front its LANGSMITH_* variables name (PID 1's environment: CGI scripts get httpd's own).
setting() { tr '\\0' '\\n' </proc/1/environ | sed -n "s/^$1=//p"; }
run=$(cat /proc/sys/kernel/random/uuid)
echo "trace-info: $(wget -q -O - "$(setting LANGSMITH_ENDPOINT)/info" 2>&1 | head -c 300)"
wget -q -O /dev/null --header "x-api-key: $(setting LANGSMITH_API_KEY)" --header 'content-type: application/json' \\
  --post-data "{\\"id\\":\\"$run\\",\\"name\\":\\"from-container\\",\\"run_type\\":\\"chain\\",\\"start_time\\":$(date +%s)000}" \\
  "$(setting LANGSMITH_ENDPOINT)/runs" 2>&1 && echo "trace-run: $run" || echo "trace-run: refused"
`;

export async function buildBusyboxImage(page: string, options: BusyboxImageOptions = {}): Promise<OciImage> {
  const work = mkdtempSync(path.join(tmpdir(), 'slipway-oci-'));
  const root = path.join(work, 'rootfs');
  for (const dir of ['bin', 'www/cgi-bin']) mkdirSync(path.join(root, dir), { recursive: true });
  copyFileSync(BUSYBOX, path.join(root, 'bin/busybox'));
  for (const applet of [
    'httpd',
    'sh',
    'id',
    'grep',
    'ls',
    'tr',
    'find',
    'touch',
    'nc',
    'env',
    'sed',
    'sort',
    'wget',
    'cat',
    'date',
    'head',
  ])
    symlinkSync('busybox', path.join(root, `bin/${applet}`));
  writeFileSync(path.join(root, 'www/index.html'), page);
  writeFileSync(path.join(root, 'www/ok'), 'ok\n');
  writeFileSync(path.join(root, 'www/cgi-bin/whoami'), WHOAMI, { mode: 0o755 });
  for (const [file, { data, mode }] of Object.entries(options.files ?? {})) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), data, { mode });
  }
  const layerFile = path.join(work, 'layer.tar');
  const fixed = new Date('2020-01-01T00:00:00Z');
  await tar.c({ file: layerFile, cwd: root, portable: true, mtime: fixed, noDirRecurse: true }, walk(root).sort());
  const tarBytes = readFileSync(layerFile);
  // gzip as registries store layers (skopeo would compress an uncompressed one, changing the
  // digests); Node's gzip header carries no time, so this is reproducible too.
  const layer = gzipSync(tarBytes, { level: 6 });

  const dir = path.join(work, 'layout');
  const blobs = path.join(dir, 'blobs/sha256');
  mkdirSync(blobs, { recursive: true });
  const put = (data: Buffer) => {
    const digest = sha256(data);
    writeFileSync(path.join(blobs, digest.slice(7)), data);
    return { digest, size: data.length };
  };
  const layerBlob = put(layer);
  const config = Buffer.from(
    JSON.stringify({
      architecture: options.architecture ?? 'amd64',
      os: 'linux',
      config: {
        ...(options.entrypoint ? { Entrypoint: options.entrypoint } : {}),
        ...(options.cmd === null ? {} : { Cmd: options.cmd ?? HTTPD_CMD }),
        Env: options.env ?? ['PATH=/bin'],
        ...(options.workingDir ? { WorkingDir: options.workingDir } : {}),
        ...(options.user !== undefined ? { User: options.user } : {}),
        ...(options.labels ? { Labels: options.labels } : {}),
        ExposedPorts: { '8080/tcp': {} },
      },
      rootfs: { type: 'layers', diff_ids: [sha256(tarBytes)] },
    }),
  );
  const configBlob = put(config);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...configBlob },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', ...layerBlob }],
    }),
  );
  const manifestBlob = put(manifest);
  writeFileSync(
    path.join(dir, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          ...manifestBlob,
          annotations: { 'org.opencontainers.image.ref.name': 'latest' },
        },
      ],
    }),
  );
  writeFileSync(path.join(dir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  return { dir, manifestDigest: manifestBlob.digest, cleanup: () => rmSync(work, { recursive: true, force: true }) };
}

/** Every path below `root`, relative (directories included). */
function walk(root: string, rel = ''): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(root, rel), { withFileTypes: true })) {
    const p = rel ? `${rel}/${entry.name}` : entry.name;
    out.push(p);
    if (entry.isDirectory()) out.push(...walk(root, p));
  }
  return out;
}

export interface PushResult {
  ok: boolean;
  digest: string | null;
  output: string;
}

/**
 * `skopeo copy` of the layout to `docker://<destination>` with Basic `user:password` (or none).
 * Asynchronous: the api under test runs in this process and must answer skopeo's token request.
 */
export function skopeoPush(image: OciImage, destination: string, credentials: string | null): Promise<PushResult> {
  const digestFile = path.join(image.dir, '..', `digest-${Date.now()}-${Math.random().toString(36).slice(2)}`);
  const args = [
    'copy',
    '--preserve-digests',
    '--dest-tls-verify=false',
    '--digestfile',
    digestFile,
    ...(credentials ? ['--dest-creds', credentials] : ['--dest-no-creds']),
    `oci:${image.dir}:latest`,
    `docker://${destination}`,
  ];
  return new Promise((resolve) => {
    execFile('skopeo', args, { encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) return resolve({ ok: false, digest: null, output: `${stdout}${stderr}${err.message}` });
      resolve({ ok: true, digest: readFileSync(digestFile, 'utf8').trim(), output: stdout });
    });
  });
}
