import type Joi from 'joi';

/** A JSON Schema (2020-12, as OpenAPI 3.1 uses it). */
export type JsonSchema = Record<string, unknown>;

interface Description {
  type: string;
  flags?: Record<string, any>;
  rules?: Array<{ name: string; args?: Record<string, any> }>;
  allow?: unknown[];
  keys?: Record<string, Description>;
  items?: Description[];
  matches?: Array<{ schema?: Description; then?: Description; otherwise?: Description }>;
  patterns?: Array<{ regex?: string; rule: Description }>;
  metas?: Array<Record<string, unknown>>;
}

const FORMAT_BY_RULE: Record<string, string> = {
  guid: 'uuid',
  uri: 'uri',
  email: 'email',
  isoDate: 'date-time',
  hostname: 'hostname',
};

function withNull(schema: JsonSchema): JsonSchema {
  if (typeof schema.type === 'string') return { ...schema, type: [schema.type, 'null'] };
  return { anyOf: [schema, { type: 'null' }] };
}

function applyCommon(d: Description, schema: JsonSchema): JsonSchema {
  const out: JsonSchema = { ...schema };
  const flags = d.flags ?? {};
  if (flags.description) out.description = flags.description;
  if (flags.default !== undefined && typeof flags.default !== 'function') out.default = flags.default;
  const valids = (d.allow ?? []).filter((v) => v !== null);
  if (flags.only && valids.length) out.enum = valids;
  for (const meta of d.metas ?? []) if (meta.example !== undefined) out.examples = [meta.example];
  const nullable = (d.allow ?? []).includes(null);
  return nullable ? withNull(out) : out;
}

function ruleArgs(d: Description, name: string): Record<string, any> | undefined {
  return d.rules?.find((r) => r.name === name)?.args;
}

function convertString(d: Description): JsonSchema {
  const schema: JsonSchema = { type: 'string' };
  for (const rule of d.rules ?? []) {
    if (rule.name === 'min') schema.minLength = rule.args?.limit;
    else if (rule.name === 'max') schema.maxLength = rule.args?.limit;
    else if (rule.name === 'length') schema.minLength = schema.maxLength = rule.args?.limit;
    else if (rule.name === 'pattern') schema.pattern = String(rule.args?.regex).replace(/^\/|\/[a-z]*$/g, '');
    else if (FORMAT_BY_RULE[rule.name]) schema.format = FORMAT_BY_RULE[rule.name];
  }
  return schema;
}

function convertNumber(d: Description): JsonSchema {
  const schema: JsonSchema = {
    type: ruleArgs(d, 'integer') !== undefined || d.rules?.some((r) => r.name === 'integer') ? 'integer' : 'number',
  };
  for (const rule of d.rules ?? []) {
    if (rule.name === 'min') schema.minimum = rule.args?.limit;
    else if (rule.name === 'max') schema.maximum = rule.args?.limit;
    else if (rule.name === 'greater') schema.exclusiveMinimum = rule.args?.limit;
    else if (rule.name === 'less') schema.exclusiveMaximum = rule.args?.limit;
    else if (rule.name === 'sign' && rule.args?.sign === 'positive') schema.exclusiveMinimum = 0;
  }
  return schema;
}

function convertObject(d: Description): JsonSchema {
  const schema: JsonSchema = { type: 'object' };
  if (d.keys) {
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    for (const [key, child] of Object.entries(d.keys)) {
      if (child.flags?.presence === 'forbidden') continue;
      properties[key] = convert(child);
      if (child.flags?.presence === 'required') required.push(key);
    }
    schema.properties = properties;
    if (required.length) schema.required = required;
  }
  const pattern = d.patterns?.[0];
  if (pattern) schema.additionalProperties = convert(pattern.rule);
  return schema;
}

function convertArray(d: Description): JsonSchema {
  const schema: JsonSchema = { type: 'array' };
  const items = d.items ?? [];
  if (items.length === 1) schema.items = convert(items[0]!);
  else if (items.length > 1) schema.items = { anyOf: items.map(convert) };
  const min = ruleArgs(d, 'min');
  const max = ruleArgs(d, 'max');
  if (min) schema.minItems = min.limit;
  if (max) schema.maxItems = max.limit;
  if (d.rules?.some((r) => r.name === 'unique')) schema.uniqueItems = true;
  return schema;
}

function convertAlternatives(d: Description): JsonSchema {
  const options = (d.matches ?? []).flatMap((m) => [m.schema, m.then, m.otherwise].filter(Boolean) as Description[]);
  return { anyOf: options.map(convert) };
}

/** Collects schemas named with joi `.id()` so the document can `$ref` them. */
export type Components = Record<string, JsonSchema>;

let components: Components | null = null;

function convert(d: Description): JsonSchema {
  const id = d.flags?.id as string | undefined;
  if (id && components) {
    // The component is the schema without `null`; a use that allows null says so itself, so
    // one nullable use does not make every use of the shared component nullable.
    const nullable = (d.allow ?? []).includes(null);
    const bare: Description = { ...d, allow: (d.allow ?? []).filter((v) => v !== null) };
    if (!components[id]) {
      components[id] = {}; // reserve first: a schema may refer to itself
      components[id] = convertInline(bare);
    }
    const ref = { $ref: `#/components/schemas/${id}` };
    return nullable ? { anyOf: [ref, { type: 'null' }] } : ref;
  }
  return convertInline(d);
}

function convertInline(d: Description): JsonSchema {
  let schema: JsonSchema;
  switch (d.type) {
    case 'string':
      schema = convertString(d);
      break;
    case 'number':
      schema = convertNumber(d);
      break;
    case 'boolean':
      schema = { type: 'boolean' };
      break;
    case 'date':
      schema = { type: 'string', format: 'date-time' };
      break;
    case 'object':
      schema = convertObject(d);
      break;
    case 'array':
      schema = convertArray(d);
      break;
    case 'commaList':
      // A query parameter: on the wire it is one comma-separated string.
      schema = { type: 'string', description: 'Comma-separated list' };
      break;
    case 'alternatives':
      schema = convertAlternatives(d);
      break;
    default:
      schema = {};
  }
  return applyCommon(d, schema);
}

/**
 * Converts a joi schema to JSON Schema through `describe()`, joi's own stable introspection.
 * With `into`, schemas named by joi `.id()` are hoisted there and referenced with `$ref`.
 */
export function joiToJsonSchema(schema: Joi.Schema, into?: Components): JsonSchema {
  components = into ?? null;
  try {
    return convert(schema.describe() as Description);
  } finally {
    components = null;
  }
}

/** The JSON Schema of each key of a joi object, with whether it is required (for parameters). */
export function objectKeys(schema: Joi.ObjectSchema): Array<{ name: string; required: boolean; schema: JsonSchema }> {
  const d = schema.describe() as Description;
  return Object.entries(d.keys ?? {}).map(([name, child]) => ({
    name,
    required: child.flags?.presence === 'required',
    schema: convert(child),
  }));
}
