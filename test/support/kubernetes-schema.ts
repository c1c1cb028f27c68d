import * as k8sModels from '@kubernetes/client-node';
import { createRequire } from 'node:module';

/**
 * Validates Kubernetes objects against the Kubernetes OpenAPI schemas, in two passes:
 *
 * 1. The compiled JSON schemas of the `kubernetes-models` packages (one model class per
 *    apiVersion and kind, whose `validate()` throws on a missing required field, a wrong type, a
 *    value outside an enum or pattern). An object of a kind the packages do not know is a problem.
 * 2. Unknown fields, as the API server's strict field validation (`kubectl --validate=strict`)
 *    reports them. The OpenAPI schemas leave `additionalProperties` open, so pass 1 accepts a
 *    misspelt field; server-side apply would then drop it silently. The field lists come from
 *    the models of `@kubernetes/client-node`, generated from the same OpenAPI document.
 */
const require = createRequire(import.meta.url);

type ModelClass = { getAttributeTypeMap(): Array<{ baseName: string; type: string }> };
const models = k8sModels as unknown as Record<string, ModelClass | undefined>;

const ARRAY = /^Array<(.+)>$/;
const MAP = /^\{ \[key: string\]: (.+); \}$/;

/** `path: unknown field "name"` for every key no schema declares, walking nested typed fields. */
function unknownFields(value: unknown, type: string, path: string): string[] {
  if (value === null || typeof value !== 'object') return [];
  const array = ARRAY.exec(type);
  if (array) return Array.isArray(value) ? value.flatMap((v, i) => unknownFields(v, array[1]!, `${path}[${i}]`)) : [];
  const map = MAP.exec(type);
  if (map) return Object.entries(value).flatMap(([k, v]) => unknownFields(v, map[1]!, `${path}.${k}`));
  const model = models[type];
  if (typeof model?.getAttributeTypeMap !== 'function') return []; // a primitive, IntOrString or free-form `any`
  const fields = new Map(model.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  return Object.entries(value).flatMap(([k, v]) => {
    const fieldType = fields.get(k);
    return fieldType === undefined ? [`${path}: unknown field "${k}"`] : unknownFields(v, fieldType, `${path}.${k}`);
  });
}

/** `apps/v1` + `Deployment` → `V1Deployment`, the client's model name. */
const modelName = (apiVersion: string, kind: string) => {
  const version = apiVersion.split('/').at(-1)!;
  return `${version[0]!.toUpperCase()}${version.slice(1)}${kind}`;
};

export async function schemaViolations(object: {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string };
}): Promise<string[]> {
  const { apiVersion, kind } = object;
  const label = `${apiVersion} ${kind} ${object.metadata?.name ?? '(unnamed)'}`;
  if (!apiVersion || !kind || !/^[A-Za-z0-9.\-/]+$/.test(apiVersion) || !/^[A-Za-z]+$/.test(kind))
    return [`${label}: no apiVersion or kind`];
  let Model: new (data: unknown) => { validate(): void };
  try {
    // require, not import(): one module per kind, chosen at run time (the bundler cannot list them).
    const mod = require(`kubernetes-models/${apiVersion}/${kind}`);
    Model = mod[kind] ?? mod.default?.[kind];
  } catch {
    return [`${label}: unknown to the Kubernetes schemas`];
  }
  if (!Model) return [`${label}: unknown to the Kubernetes schemas`];
  const problems: string[] = [];
  try {
    new Model(object).validate();
  } catch (err) {
    problems.push(`${label}: ${(err as Error).message}`);
  }
  const type = modelName(apiVersion, kind);
  if (!models[type]) return [...problems, `${label}: no field list for ${type} in @kubernetes/client-node`];
  return [...problems, ...unknownFields(object, type, '').map((p) => `${label}: ${p || '.'}`)];
}
