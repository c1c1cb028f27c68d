import { parseArgs } from 'node:util';

/** A revision status that ends a rollout. */
const TERMINAL = new Set(['DEPLOYED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'CREATE_FAILED', 'INTERRUPTED']);

/** What `slipway preview` needs to reach the api: a CI job's URL and key. */
export interface ApiAccess {
  url: string;
  key: string;
}

export class PreviewUsageError extends Error {}

/** SLIPWAY_URL and SLIPWAY_API_KEY, as the guide's scripts use them. */
export function apiAccess(env: NodeJS.ProcessEnv = process.env): ApiAccess {
  const url = env.SLIPWAY_URL?.replace(/\/+$/, '');
  const key = env.SLIPWAY_API_KEY;
  if (!url || !key) throw new PreviewUsageError('slipway preview calls the api: set SLIPWAY_URL and SLIPWAY_API_KEY');
  return { url, key };
}

async function call(access: ApiAccess, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${access.url}${path}`, {
    method,
    headers: { 'x-api-key': access.key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const parsed = text ? JSON.parse(text) : null;
  if (!res.ok) {
    const detail = typeof parsed?.detail === 'string' ? parsed.detail : JSON.stringify(parsed?.detail ?? parsed);
    throw new Error(`${method} ${path}: ${res.status} ${detail}`);
  }
  return parsed;
}

/** A deployment named by id or by name (exact, in the key's workspace). */
async function deploymentId(access: ApiAccess, idOrName: string): Promise<string> {
  if (/^[0-9a-f-]{36}$/i.test(idOrName)) return idOrName;
  const found = (await call(access, 'GET', `/v2/deployments?name=${encodeURIComponent(idOrName)}&is_preview=false`))
    .resources as Array<{ id: string }>;
  if (!found.length) throw new Error(`no deployment named '${idOrName}'`);
  return found[0]!.id;
}

const summary = (d: any) => ({
  id: d.id,
  name: d.name,
  number: d.preview?.pull_request?.number ?? null,
  ref: d.preview?.pull_request?.head_ref ?? null,
  status: d.status,
  url: d.url,
  expires_at: d.preview?.expires_at ?? null,
});

/**
 * `slipway preview create|list|delete` (docs/api.md, Previews): previews from a CI job without a
 * forge, through the api (SLIPWAY_URL, SLIPWAY_API_KEY). `create --wait` waits for the preview's
 * revision and exits 1 unless it is DEPLOYED. Output is JSON, one value, for scripts.
 */
export async function preview(
  args: string[],
  out: (line: string) => void = console.log,
  access = apiAccess(),
): Promise<void> {
  const [action, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      ref: { type: 'string' },
      number: { type: 'string' },
      wait: { type: 'boolean', default: false },
      'timeout-seconds': { type: 'string', default: '900' },
    },
  });
  const [target, numberArg] = positionals;
  if (!target)
    throw new PreviewUsageError(
      'usage: slipway preview create <deployment> --ref <branch> [--number <n>] [--wait] | list <deployment> | ' +
        'delete <deployment> <number>',
    );
  const parent = await deploymentId(access, target);
  switch (action) {
    case 'create': {
      if (!values.ref) throw new PreviewUsageError('slipway preview create needs --ref <branch>');
      const number = values.number === undefined ? undefined : Number(values.number);
      if (number !== undefined && (!Number.isInteger(number) || number < 1))
        throw new PreviewUsageError('--number must be a positive whole number');
      let made = await call(access, 'POST', `/v2/deployments/${parent}/previews`, {
        ref: values.ref,
        ...(number ? { number } : {}),
      });
      if (values.wait) {
        const deadline = Date.now() + Number(values['timeout-seconds']) * 1000;
        for (;;) {
          const revision = await call(access, 'GET', `/v2/deployments/${made.id}/revisions/${made.latest_revision_id}`);
          if (TERMINAL.has(revision.status)) {
            made = await call(access, 'GET', `/v2/deployments/${made.id}`);
            out(
              JSON.stringify({
                ...summary(made),
                revision: { id: revision.id, status: revision.status, status_message: revision.status_message },
              }),
            );
            if (revision.status !== 'DEPLOYED') process.exitCode = 1;
            return;
          }
          if (Date.now() > deadline)
            throw new Error(`the preview's revision is still ${revision.status} after ${values['timeout-seconds']} s`);
          await new Promise((r) => setTimeout(r, 2_000));
        }
      }
      out(JSON.stringify(summary(made)));
      return;
    }
    case 'list':
      out(
        JSON.stringify(
          ((await call(access, 'GET', `/v2/deployments/${parent}/previews`)).resources as unknown[]).map(summary),
        ),
      );
      return;
    case 'delete': {
      const number = Number(numberArg);
      if (!Number.isInteger(number) || number < 1)
        throw new PreviewUsageError('usage: slipway preview delete <deployment> <number>');
      await call(access, 'DELETE', `/v2/deployments/${parent}/previews/${number}`);
      out(JSON.stringify({ deleted: number }));
      return;
    }
    default:
      throw new PreviewUsageError('usage: slipway preview create|list|delete <deployment> …');
  }
}
