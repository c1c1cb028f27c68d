/**
 * A repository URL in the form two spellings of one repository share: no trailing slash, no
 * `.git` suffix, and (for network URLs) a lower-case scheme and host. Push payloads name a
 * repository by `clone_url` (with `.git`), `html_url` or `url` (without), so deployments and
 * webhooks compare through this.
 */
export function normalizeRepoUrl(url: string): string {
  let out = url
    .trim()
    .replace(/\/+$/, '')
    .replace(/\.git$/i, '')
    .replace(/\/+$/, '');
  const scheme = /^([a-z][a-z0-9+.-]*):\/\/([^/]*)/i.exec(out);
  if (scheme && scheme[1]!.toLowerCase() !== 'file') {
    out = `${scheme[1]!.toLowerCase()}://${scheme[2]!.toLowerCase()}${out.slice(scheme[0].length)}`;
  }
  return out;
}
