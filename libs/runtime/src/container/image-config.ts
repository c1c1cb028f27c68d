import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ArtifactError } from '../instance-types.js';

/** What of an OCI image's configuration the container runtime uses. */
export interface ImageConfig {
  /** `Entrypoint` followed by `Cmd`: what runs (never empty). */
  command: string[];
  /** The image's `Env` (lowest precedence: the deployment's variables override it). */
  env: Record<string, string>;
  /** `WorkingDir`, `/` when unset. */
  workingDir: string;
  /** True when the image's own entrypoint is an init (tini, dumb-init, catatonit): no init is added. */
  hasInit: boolean;
  /**
   * The image's `USER` (`name`, `uid`, `uid:gid`), null when unset. Never used to run anything:
   * containers run as the deployment's uid; the deploy log says so when an image sets one.
   */
  user: string | null;
  /** The image's `Labels` (absent in a configuration unpacked before they were read). */
  labels?: Record<string, string>;
}

/** PATH inside a container whose image and deployment set none. */
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** An image that cannot run here; the message says why (it becomes the revision's status message). */
export class ImageError extends ArtifactError {
  override name = 'ImageError';
}

interface Descriptor {
  mediaType?: string;
  digest: string;
  annotations?: Record<string, string>;
}

/** `process.arch` → the OCI `architecture` name. */
const OCI_ARCH: Record<string, string> = {
  x64: 'amd64',
  arm64: 'arm64',
  arm: 'arm',
  ppc64: 'ppc64le',
  s390x: 's390x',
  riscv64: 'riscv64',
};
const INITS = /(^|\/)(tini|dumb-init|catatonit|docker-init)$/;

const blobPath = (layout: string, digest: string) => {
  if (!/^sha256:[0-9a-f]{64}$/.test(digest))
    throw new ImageError(`The image names a blob with a malformed digest '${digest.slice(0, 80)}'.`);
  return path.join(layout, 'blobs', 'sha256', digest.slice(7));
};

async function json<T>(file: string, what: string): Promise<T> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch {
    throw new ImageError(`The image's ${what} is missing or not JSON.`);
  }
}

/** The manifest digest an OCI layout names under `ref` (`org.opencontainers.image.ref.name`). */
export async function layoutManifestDigest(layout: string, ref: string): Promise<string> {
  const index = await json<{ manifests?: Descriptor[] }>(path.join(layout, 'index.json'), 'index');
  const found =
    index.manifests?.find((m) => m.annotations?.['org.opencontainers.image.ref.name'] === ref) ?? index.manifests?.[0];
  if (!found) throw new ImageError('The image layout names no manifest.');
  return found.digest;
}

/**
 * Reads the configuration of the image `manifestDigest` in an OCI layout and checks it can run
 * on this machine: Linux, this machine's architecture, and something to run (Entrypoint or Cmd).
 */
export async function readImageConfig(
  layout: string,
  manifestDigest: string,
  arch: string = process.arch,
): Promise<ImageConfig> {
  const manifest = await json<{ config?: Descriptor; manifests?: unknown[] }>(
    blobPath(layout, manifestDigest),
    'manifest',
  );
  if (manifest.manifests)
    throw new ImageError(
      'The image is a multi-platform index; push the image of one platform (linux/' + (OCI_ARCH[arch] ?? arch) + ').',
    );
  if (!manifest.config?.digest) throw new ImageError('The image manifest has no config.');
  const config = await json<{
    architecture?: string;
    os?: string;
    config?: {
      Env?: string[] | null;
      Entrypoint?: string[] | null;
      Cmd?: string[] | null;
      WorkingDir?: string;
      User?: string;
      Labels?: Record<string, unknown> | null;
    };
  }>(blobPath(layout, manifest.config.digest), 'config');
  const wanted = OCI_ARCH[arch] ?? arch;
  if ((config.os ?? 'linux') !== 'linux')
    throw new ImageError(`The image is for ${config.os}; this runtime runs linux/${wanted} images.`);
  if (config.architecture !== wanted)
    throw new ImageError(
      `The image is for ${config.architecture ?? 'an unknown architecture'}; this machine runs linux/${wanted} images.`,
    );
  const c = config.config ?? {};
  const strings = (v: unknown) => (Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : []);
  const command = [...strings(c.Entrypoint), ...strings(c.Cmd)];
  if (!command.length)
    throw new ImageError(
      'The image has neither an Entrypoint nor a Cmd: there is nothing to run. Set ENTRYPOINT or CMD when you build it.',
    );
  const env: Record<string, string> = {};
  for (const entry of strings(c.Env)) {
    const eq = entry.indexOf('=');
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  const workingDir = typeof c.WorkingDir === 'string' && c.WorkingDir.startsWith('/') ? c.WorkingDir : '/';
  const user = typeof c.User === 'string' && c.User.trim() ? c.User.trim() : null;
  const labels: Record<string, string> = {};
  for (const [name, value] of Object.entries(c.Labels ?? {})) if (typeof value === 'string') labels[name] = value;
  return { command, env, workingDir, hasInit: INITS.test(command[0]!), user, labels };
}

/** The label that marks an image as a LangGraph agent server when its environment does not say so (docs/api.md, Deployments). */
export const AGENT_SERVER_LABEL = 'dev.slipway.agent-server';

/**
 * Whether an image is a LangGraph agent server, and its custom auth handler (`auth_path`, null:
 * none), as an artifact's manifest says it of a built one; null for any other image.
 * `langgraph build` (Python and JS) writes the graphs into `LANGSERVE_GRAPHS` and a graph
 * config's `auth` into `LANGGRAPH_AUTH` (`{"path": …}`); upstream sets no label, so an image
 * built otherwise says so with the label `dev.slipway.agent-server=true`.
 */
export function imageAgentServer(config: Pick<ImageConfig, 'env' | 'labels'>): { auth_path: string | null } | null {
  if (!config.env.LANGSERVE_GRAPHS && config.labels?.[AGENT_SERVER_LABEL]?.trim().toLowerCase() !== 'true') return null;
  return { auth_path: authPath(config.env.LANGGRAPH_AUTH) };
}

function authPath(value: string | undefined): string | null {
  if (!value) return null;
  try {
    const parsed = JSON.parse(value) as { path?: unknown } | null;
    return typeof parsed?.path === 'string' && parsed.path ? parsed.path : null;
  } catch {
    return null;
  }
}
