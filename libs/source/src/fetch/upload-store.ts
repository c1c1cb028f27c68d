import { randomUUID } from 'node:crypto';
import path from 'node:path';

/**
 * Where uploaded source tarballs live (docs/api.md, Uploads and the deploy CLIs). The api writes them and the builder
 * reads them; both resolve an `object_path` through `uploadFilePath`, so they agree on the
 * layout and neither trusts a path from a request.
 *
 * An object path is `uploads/<deployment uuid>/<upload uuid>.tar.gz`, stored as
 * `<dataDir>/uploads/<deployment uuid>/<upload uuid>.tar.gz`. Clients treat it as opaque.
 */
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const OBJECT_PATH = new RegExp(`^uploads/(${UUID})/(${UUID})\\.tar\\.gz$`);

export interface UploadObject {
  deploymentId: string;
  uploadId: string;
}

/** The object path of upload `uploadId` (a fresh one when omitted) of `deploymentId`. */
export function uploadObjectPath(deploymentId: string, uploadId: string = randomUUID()): string {
  const objectPath = `uploads/${deploymentId.toLowerCase()}/${uploadId.toLowerCase()}.tar.gz`;
  if (!OBJECT_PATH.test(objectPath)) throw new Error(`Not a deployment and upload id: ${deploymentId}, ${uploadId}`);
  return objectPath;
}

/** The ids in an object path, or null when it is not one we issue. */
export function parseUploadObjectPath(objectPath: string): UploadObject | null {
  const match = OBJECT_PATH.exec(objectPath);
  return match ? { deploymentId: match[1]!, uploadId: match[2]! } : null;
}

/**
 * The absolute file of an object path under `dataDir`. Throws for anything that is not an
 * object path we issue: the strict pattern leaves no room for `..`, separators or absolute
 * paths, and the containment check guards the join itself.
 */
export function uploadFilePath(dataDir: string, objectPath: string): string {
  if (!OBJECT_PATH.test(objectPath)) throw new Error(`Not an upload object path: ${JSON.stringify(objectPath)}`);
  const root = path.resolve(dataDir, 'uploads');
  const file = path.resolve(dataDir, objectPath);
  const rel = path.relative(root, file);
  if (!rel || rel.startsWith('..') || path.isAbsolute(rel))
    throw new Error(`Upload path escapes ${root}: ${objectPath}`);
  return file;
}
