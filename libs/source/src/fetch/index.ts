export { parseUploadObjectPath, uploadFilePath, uploadObjectPath, type UploadObject } from './upload-store.js';
export { SourceFetchError } from './exec-tool.js';
export { displayGitUrl, fetchGitRepository, type FetchedGit, type GitAuth, type GitFetchOptions } from './git.js';
export { extractTarball, type ExtractedTarball, type ExtractTarballOptions } from './tarball.js';
export { ArchivePolicy, inspectArchiveStream } from './archive-policy.js';
