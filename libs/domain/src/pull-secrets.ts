import type { SecretEntry } from './deployment-rules.js';

/**
 * `resource_spec.image_pull_secrets` on the embedded container runtime (docs/api.md, Images and
 * the built-in registry): each `{name}` names one of the deployment's secrets, whose value is a
 * Docker config (`{"auths": {"<host[:port]>": {"auth": base64(user:password)} | {"username",
 * "password"}}}`, the `.dockerconfigjson` of Kubernetes), `{"username","password"}`, or
 * `user:password`; the last two are for whatever registry the image is on.
 */
export interface RegistryCredential {
  username: string;
  password: string;
}

/** A named pull secret that cannot be used: `index` into image_pull_secrets, and why. */
export interface PullSecretProblem {
  index: number;
  message: string;
}

type Parsed =
  | { kind: 'any'; credential: RegistryCredential }
  | { kind: 'hosts'; auths: Map<string, RegistryCredential> };

/** Docker Hub's aliases are one registry; a key may carry a scheme or path (`https://index.docker.io/v1/`). */
function registryKey(host: string): string {
  const bare = host
    .trim()
    .toLowerCase()
    .replace(/^[a-z]+:\/\//, '')
    .replace(/\/.*$/, '');
  return ['index.docker.io', 'registry-1.docker.io', 'registry.hub.docker.com'].includes(bare) ? 'docker.io' : bare;
}

function userPassword(value: unknown): RegistryCredential | null {
  if (!value || typeof value !== 'object') return null;
  const { username, password, auth } = value as Record<string, unknown>;
  if (typeof username === 'string' && typeof password === 'string' && username) return { username, password };
  if (typeof auth !== 'string') return null;
  return colonPair(Buffer.from(auth, 'base64').toString('utf8'));
}

function colonPair(text: string): RegistryCredential | null {
  const colon = text.indexOf(':');
  return colon > 0 ? { username: text.slice(0, colon), password: text.slice(colon + 1) } : null;
}

/** The credentials a secret value holds, or why it holds none (never quoting the value). */
function parsePullSecret(value: string): Parsed | string {
  const text = value.trim();
  if (!text.startsWith('{')) {
    const pair = colonPair(text);
    return pair ? { kind: 'any', credential: pair } : 'is neither a Docker config JSON nor user:password';
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return 'is not valid JSON';
  }
  const auths = (json as { auths?: unknown }).auths;
  if (auths && typeof auths === 'object') {
    const map = new Map<string, RegistryCredential>();
    for (const [host, entry] of Object.entries(auths)) {
      const credential = userPassword(entry);
      if (!credential)
        return `has no usable "auth" or "username"/"password" for ${JSON.stringify(host.slice(0, 100))} in "auths"`;
      map.set(registryKey(host), credential);
    }
    return { kind: 'hosts', auths: map };
  }
  const credential = userPassword(json);
  return credential ? { kind: 'any', credential } : 'is JSON without "auths" or "username"/"password"';
}

/**
 * What is wrong with `refs` given the deployment's `secrets`: a name no secret has, or a value
 * in neither format. Empty when every named secret can be used.
 */
export function pullSecretProblems(
  refs: ReadonlyArray<{ name: string }>,
  secrets: readonly SecretEntry[],
): PullSecretProblem[] {
  const problems: PullSecretProblem[] = [];
  refs.forEach(({ name }, index) => {
    const secret = secrets.find((s) => s.name === name);
    if (!secret) problems.push({ index, message: `no secret named '${name}' among the deployment's secrets` });
    else {
      const parsed = parsePullSecret(secret.value);
      if (typeof parsed === 'string') problems.push({ index, message: `secret '${name}' ${parsed}` });
    }
  });
  return problems;
}

/**
 * The credential for `registry` (`host[:port]`) among `refs`, first match in their order: a
 * Docker config entry for that host, or a host-less `user:password`. Null: none is for this
 * registry (the pull is anonymous, as Kubernetes ignores pull secrets of other registries).
 * Throws the first problem of `pullSecretProblems`.
 */
export function pullCredential(
  refs: ReadonlyArray<{ name: string }>,
  secrets: readonly SecretEntry[],
  registry: string,
): RegistryCredential | null {
  const [problem] = pullSecretProblems(refs, secrets);
  if (problem) throw new Error(`resource_spec.image_pull_secrets[${problem.index}].name: ${problem.message}.`);
  const key = registryKey(registry);
  for (const { name } of refs) {
    const parsed = parsePullSecret(secrets.find((s) => s.name === name)!.value) as Parsed;
    const found = parsed.kind === 'any' ? parsed.credential : parsed.auths.get(key);
    if (found) return found;
  }
  return null;
}

/** The forms of a credential a log line could carry: masked like the secret values themselves. */
export function credentialForms({ username, password }: RegistryCredential): string[] {
  const pair = `${username}:${password}`;
  return [password, pair, Buffer.from(pair).toString('base64')];
}
