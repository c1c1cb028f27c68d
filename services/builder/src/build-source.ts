/**
 * A build's first step: its source tree, from the deployment's git repository (through its
 * integration's clone access) or from an uploaded tarball, into the build's source directory.
 */
import { existsSync } from 'node:fs';
import type { Config } from '@slipway/config';
import { UploadRepository, type EntityManager } from '@slipway/db';
import type { ArtifactManifest } from '@slipway/domain';
import type { BuildRow } from '@slipway/pipeline';
import {
  displayGitUrl,
  extractTarball,
  fetchGitRepository,
  uploadFilePath,
  type CloneAuth,
  type CloneProtocol,
} from '@slipway/source';
import { BuildError, type BuildLog, type BuildPaths } from './build-steps.js';

/** What one clone may use: credentials, and the only protocol git is allowed. */
export interface CloneAccess {
  auth: CloneAuth | null;
  protocol: CloneProtocol;
}

export interface SourceInputs {
  rev: BuildRow;
  paths: BuildPaths;
  log: BuildLog;
  config: Pick<Config, 'dataDir' | 'uploadMaxBytes'>;
  /** Reads `uploads` (the tarball's owner and completeness). */
  manager: EntityManager;
  cloneAccess: (build: BuildRow) => Promise<CloneAccess>;
}

export interface FetchedSource {
  sourceRoot: string;
  /** The commit checked out, with its message and author's name; null for an upload. */
  commit: string | null;
  commitMessage?: string;
  commitAuthor?: string;
  /** Where the source came from, for messages. */
  where: string;
  manifestSource: ArtifactManifest['source'];
}

export async function fetchSource(
  { rev, paths, log, config, manager, cloneAccess }: SourceInputs,
  signal: AbortSignal,
): Promise<FetchedSource> {
  const revisionConfig = rev.source_revision_config ?? {};
  if (rev.source === 'repohost') {
    const repoUrl = rev.source_config.repo_url;
    if (!repoUrl) throw new BuildError('The deployment has no source_config.repo_url to build from.');
    const ref = revisionConfig.repo_ref || null;
    const pinned = revisionConfig.repo_commit_sha || null;
    const { auth, protocol } = await cloneAccess(rev);
    const display = displayGitUrl(repoUrl);
    log.line(`Fetching ${display} at ${pinned ? `commit ${pinned}` : ref ? `'${ref}'` : 'its default branch'}`);
    const fetched = await fetchGitRepository({
      url: auth?.type === 'url' ? auth.url : repoUrl,
      ref,
      commit: pinned,
      dir: paths.source,
      auth: auth?.type === 'http-header' ? { header: auth.header } : null,
      allowProtocol: protocol,
      signal,
    });
    log.line(`Checked out commit ${fetched.commit}`);
    return {
      sourceRoot: fetched.dir,
      commit: fetched.commit,
      commitMessage: fetched.message,
      commitAuthor: fetched.author,
      where: `${display} ${ref ? `'${ref}'` : 'default branch'} (commit ${fetched.commit.slice(0, 12)})`,
      manifestSource: { type: 'repohost', repo_url: display, ref },
    };
  }
  if (rev.source === 'upload') {
    const objectPath = revisionConfig.source_tarball_path ?? null;
    const archive = await uploadedTarball(manager, config.dataDir, rev.deployment_id, objectPath);
    log.line(`Extracting the uploaded source ${objectPath}`);
    // Ten times the upload limit: room for any real source tree, not for a gzip bomb.
    const { root, entries } = await extractTarball({
      archive,
      dir: paths.source,
      signal,
      maxUncompressedBytes: 10 * config.uploadMaxBytes,
    });
    log.line(`Extracted ${entries} entries`);
    return {
      sourceRoot: root,
      commit: null,
      where: 'the uploaded source',
      manifestSource: { type: 'upload', object_path: objectPath! },
    };
  }
  throw new BuildError(`Revisions of ${rev.source} deployments are not built from source.`);
}

/** The file of an uploaded tarball: known in `uploads` for this deployment, and present under the data dir. */
async function uploadedTarball(
  manager: EntityManager,
  dataDir: string,
  deploymentId: string,
  objectPath: string | null,
): Promise<string> {
  if (!objectPath)
    throw new BuildError('This revision has no source tarball (source_revision_config.source_tarball_path is empty).');
  const upload = await new UploadRepository(manager).find(objectPath);
  const again = 'upload the source again (POST /v2/deployments/{id}/upload-url).';
  if (!upload || upload.deploymentId !== deploymentId) {
    throw new BuildError(`The source tarball '${objectPath}' was never uploaded for this deployment; ${again}`);
  }
  let file: string;
  try {
    file = uploadFilePath(dataDir, objectPath);
  } catch {
    throw new BuildError(`'${objectPath}' is not an upload object path; ${again}`);
  }
  if (!existsSync(file)) {
    throw new BuildError(
      `The source tarball '${objectPath}' ${upload.completedAt ? 'is missing on the server' : 'was never completely uploaded'}; ${again}`,
    );
  }
  return file;
}
