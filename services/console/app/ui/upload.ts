import { ApiError, detailText } from '../api/client';
import type { Deployment } from '../api/types';
import type { ApiCall, CallFn } from './ApiCall';

/**
 * The deploy CLIs' upload, from the browser (docs/api.md, Uploads): a signed URL, the tarball
 * PUT to it (no key: the URL is the credential), then a PATCH that builds a revision from it.
 */
export async function uploadSource(
  call: CallFn,
  record: (c: ApiCall) => void,
  deploymentId: string,
  file: File,
  configPath: string,
): Promise<Deployment> {
  const { upload_url, object_path } = await call<{ upload_url: string; object_path: string }>(
    'POST',
    `/v2/deployments/${deploymentId}/upload-url`,
  );
  // The URL is built from the server's public URL; the console talks to the origin it was
  // served from (its Content-Security-Policy allows no other), so the same path goes there.
  const signed = new URL(upload_url);
  const target = signed.origin === location.origin ? signed : new URL(signed.pathname + signed.search, location.origin);
  record({
    method: 'PUT',
    url: `${target.origin}${target.pathname}?<signed token>`,
    authenticated: false,
    tenantId: null,
    file: file.name,
  });
  let res: Response;
  try {
    res = await fetch(target, {
      method: 'PUT',
      body: file,
      headers: { 'Content-Type': 'application/gzip' },
      credentials: 'omit',
    });
  } catch {
    throw new ApiError(0, 'The upload could not reach the API.');
  }
  if (!res.ok) {
    const body = await res.json().catch(() => null);
    throw new ApiError(res.status, `The upload was refused: ${detailText(res.status, body)}`);
  }
  return call<Deployment>('PATCH', `/v2/deployments/${deploymentId}`, {
    revision_source: 'internal_source',
    source_revision_config: {
      source_tarball_path: object_path,
      ...(configPath ? { langgraph_config_path: configPath } : {}),
    },
  });
}
