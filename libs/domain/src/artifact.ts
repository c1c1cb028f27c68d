/**
 * The built artifact of a cloud-hosted revision: the contract between the builder, which
 * writes it, and the process runtime, which runs it.
 *
 * Layout, under `<dataDir>/artifacts/<revision id>/` (the revision's `artifact_ref`, absolute):
 * - `app/` — the source tree after install and build (node_modules included, `.git` removed);
 * - `artifact.json` — an {@link ArtifactManifest}.
 * The directory appears whole or not at all (it is renamed into place), and never changes
 * afterwards: redeploys of the revision reuse it as it is.
 */
export const ARTIFACT_MANIFEST_FILE = 'artifact.json';
export const ARTIFACT_APP_DIR = 'app';

/** `image_uri` of a revision built into an artifact directory. */
export const artifactUri = (revisionId: string) => `artifact://${revisionId}`;

export interface ArtifactManifest {
  /** Format of this file; bumped on incompatible changes. */
  version: 1;
  revision_id: string;
  /** The commit built (repohost), or null (uploaded tarball). */
  commit: string | null;
  source: { type: 'repohost'; repo_url: string; ref: string | null } | { type: 'upload'; object_path: string };
  /** Path of the graph config file, relative to `app/`; null for a plain app that has none. */
  graph_config_path: string | null;
  /** Graph name → import string, relative to `start.cwd` (none for a plain app). */
  graphs: Record<string, string>;
  /** From the graph config: an env file path (relative to `start.cwd`), an object of values, or null. */
  env: string | string[] | Record<string, string> | null;
  /** Requested by the graph config ("20", "22", "24"), or null when it did not say. */
  node_version: string | null;
  /**
   * How to start the server: `command` with `args` in `cwd` (relative to `app/`; the graph
   * config file's directory), with the deployment's environment and `PORT` set by the runtime.
   */
  start: { command: string; args: string[]; cwd: string };
  /**
   * Set when the platform serves the project's graphs (no `start` script of its own): the
   * agent server. `auth_path` is the graph config's custom auth handler, if any.
   */
  agent_server?: { auth_path: string | null };
  built_at: string;
}
