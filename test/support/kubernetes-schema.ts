import { createRequire } from 'node:module';

/**
 * Validates Kubernetes objects against the Kubernetes OpenAPI schemas, as compiled JSON
 * schemas in the `kubernetes-models` packages (one model class per apiVersion and kind, whose
 * `validate()` throws on a schema violation: a missing required field, a wrong type, a value
 * outside an enum or pattern). An object of a kind the packages do not know is a problem too.
 */
const require = createRequire(import.meta.url);

export async function schemaViolations(object: { apiVersion?: string; kind?: string; metadata?: { name?: string } }): Promise<string[]> {
  const { apiVersion, kind } = object;
  const label = `${apiVersion} ${kind} ${object.metadata?.name ?? '(unnamed)'}`;
  if (!apiVersion || !kind || !/^[A-Za-z0-9.\-/]+$/.test(apiVersion) || !/^[A-Za-z]+$/.test(kind)) return [`${label}: no apiVersion or kind`];
  let Model: new (data: unknown) => { validate(): void };
  try {
    // require, not import(): one module per kind, chosen at run time (the bundler cannot list them).
    const mod = require(`kubernetes-models/${apiVersion}/${kind}`);
    Model = mod[kind] ?? mod.default?.[kind];
  } catch {
    return [`${label}: unknown to the Kubernetes schemas`];
  }
  if (!Model) return [`${label}: unknown to the Kubernetes schemas`];
  try {
    new Model(object).validate();
    return [];
  } catch (err) {
    return [`${label}: ${(err as Error).message}`];
  }
}
