import { readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { ARTIFACT_APP_DIR, ARTIFACT_MANIFEST_FILE, type ArtifactManifest } from '@slipway/domain';
import { ArtifactError } from '../instance-types.js';

export { ArtifactError };

/** A readable artifact (see `ArtifactManifest` in @slipway/domain for the layout). */
export interface Artifact {
  dir: string;
  manifest: ArtifactManifest;
  /** Where the server starts: `app/` joined with the manifest's `start.cwd`. */
  cwd: string;
  /** The graph config's environment (its env file(s) or values); secrets override it. */
  env: Record<string, string>;
  /** Problems that do not stop the start (an env file that is not there), for the deploy log. */
  warnings: string[];
}

/** `KEY=value` lines as dotenv writes them: comments, `export `, quotes, `\n` in double quotes. */
export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*)$/.exec(line);
    if (!match) continue;
    let value = match[2]!;
    const quote = value[0];
    if ((quote === '"' || quote === "'") && value.endsWith(quote) && value.length >= 2) {
      value = value.slice(1, -1);
      if (quote === '"') value = value.replace(/\\n/g, '\n');
    } else {
      value = value.replace(/\s+#.*$/, '');
    }
    out[match[1]!] = value;
  }
  return out;
}

const inside = (root: string, target: string) => {
  const rel = path.relative(root, target);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
};

/** Reads and checks an artifact directory (`revisions.artifact_ref`). */
export async function readArtifact(dir: string): Promise<Artifact> {
  if (!path.isAbsolute(dir)) throw new ArtifactError(`Artifact reference '${dir}' is not an absolute directory.`);
  const appDir = path.join(dir, ARTIFACT_APP_DIR);
  let raw: string;
  try {
    raw = await readFile(path.join(dir, ARTIFACT_MANIFEST_FILE), 'utf8');
    if (!(await stat(appDir)).isDirectory()) throw new Error(`${ARTIFACT_APP_DIR}/ is not a directory`);
  } catch (err) {
    throw new ArtifactError(`Artifact ${dir} is not usable: ${(err as Error).message}.`);
  }
  let manifest: ArtifactManifest;
  try {
    manifest = JSON.parse(raw) as ArtifactManifest;
  } catch {
    throw new ArtifactError(`Artifact ${dir} has an ${ARTIFACT_MANIFEST_FILE} that is not JSON.`);
  }
  const start = manifest?.start;
  if (
    !start ||
    typeof start.command !== 'string' ||
    !start.command ||
    !Array.isArray(start.args) ||
    !start.args.every((a) => typeof a === 'string')
  ) {
    throw new ArtifactError(`Artifact ${dir} has no valid start command in ${ARTIFACT_MANIFEST_FILE}.`);
  }
  const cwd = path.resolve(appDir, typeof start.cwd === 'string' ? start.cwd : '.');
  if (!inside(appDir, cwd))
    throw new ArtifactError(`Artifact ${dir} starts outside its ${ARTIFACT_APP_DIR}/ directory.`);

  const env: Record<string, string> = {};
  const warnings: string[] = [];
  const given = manifest.env;
  const files = typeof given === 'string' ? [given] : Array.isArray(given) ? given : [];
  if (given && typeof given === 'object' && !Array.isArray(given)) {
    for (const [name, value] of Object.entries(given)) if (typeof value === 'string') env[name] = value;
  }
  for (const file of files) {
    const full = path.resolve(cwd, file);
    if (!inside(appDir, full)) {
      warnings.push(`Env file '${file}' lies outside the app; ignored.`);
      continue;
    }
    // The build wrote this tree as the deployment's uid; this process (root, with the sandbox)
    // follows a link only when it ends inside the app too, never to a file of the control plane.
    const real = await realpath(full).catch(() => null);
    const realApp = await realpath(appDir).catch(() => appDir);
    if (real && !inside(realApp, real)) {
      warnings.push(`Env file '${file}' links outside the app; ignored.`);
      continue;
    }
    try {
      Object.assign(env, parseEnvFile(await readFile(real ?? full, 'utf8')));
    } catch {
      warnings.push(`Env file '${file}' named by the graph config is not in the build; ignored.`);
    }
  }
  return { dir, manifest, cwd, env, warnings };
}
