/**
 * Renders the OpenAPI document as the Markdown reference kept in `docs/reference.md`, so the
 * repository's docs list exactly the operations the api serves. The openapi integration test
 * fails when the committed file differs from this rendering (`pnpm docs:reference` rewrites it).
 */

type Schema = Record<string, any>;

interface Operation {
  operationId: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: { name: string; in: string; required?: boolean; schema?: Schema }[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, { description: string }>;
  security?: unknown[];
}

const METHOD_ORDER = ['get', 'post', 'put', 'patch', 'delete'];

/** `{ $ref: '#/components/schemas/X' }` → the schema it names (one level). */
function resolve(schema: Schema | undefined, doc: Schema): Schema | undefined {
  const ref = schema?.$ref as string | undefined;
  if (!ref) return schema;
  return doc.components?.schemas?.[ref.replace('#/components/schemas/', '')];
}

/** A one-line type: `string (uuid)`, `integer 1..100`, `"a" | "b"`, `object`, `array of string`. */
function typeOf(schema: Schema | undefined, doc: Schema): string {
  if (!schema) return '';
  if (schema.$ref) return String(schema.$ref).replace('#/components/schemas/', '');
  if (Array.isArray(schema.enum)) return schema.enum.map((v: unknown) => JSON.stringify(v)).join(' | ');
  if (Array.isArray(schema.anyOf ?? schema.oneOf))
    return (schema.anyOf ?? schema.oneOf).map((s: Schema) => typeOf(s, doc)).join(' | ');
  const type = Array.isArray(schema.type) ? schema.type.join(' | ') : (schema.type ?? 'any');
  if (type === 'array') return `array of ${typeOf(schema.items, doc) || 'any'}`;
  const range =
    schema.minimum !== undefined || schema.maximum !== undefined
      ? ` ${schema.minimum ?? ''}..${schema.maximum ?? ''}`
      : '';
  const format = schema.format ? ` (${schema.format})` : '';
  return `${type}${format}${range}`;
}

const cell = (text: string | undefined): string => (text ?? '').replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');

function renderOperation(method: string, path: string, op: Operation, doc: Schema): string[] {
  const out = [`### \`${method.toUpperCase()} ${path}\``, ''];
  if (op.summary) out.push(`${op.summary}.`.replace(/\.\.$/, '.'), '');
  const auth =
    op.security && op.security.length === 0
      ? 'No credentials.'
      : op.security?.some((s) => s && typeof s === 'object' && Object.keys(s).length === 0)
        ? 'No credentials needed; one that is sent is checked.'
        : 'Credentials: an API key or JWT (`X-Tenant-Id` with organization-scoped ones).';
  out.push(op.description ? `${auth} ${op.description}` : auth, '');

  const params = op.parameters ?? [];
  if (params.length) {
    out.push('| parameter | in | required | type |', '|---|---|---|---|');
    for (const p of params)
      out.push(`| \`${p.name}\` | ${p.in} | ${p.required ? 'yes' : 'no'} | ${cell(typeOf(p.schema, doc))} |`);
    out.push('');
  }

  const body = resolve(op.requestBody?.content['application/json']?.schema, doc);
  if (body) {
    const props = Object.entries((body.properties ?? {}) as Record<string, Schema>);
    const required = new Set<string>(body.required ?? []);
    out.push(`Body${op.requestBody?.required ? '' : ' (optional)'}:`, '');
    if (props.length) {
      out.push('| field | required | type |', '|---|---|---|');
      for (const [name, schema] of props)
        out.push(`| \`${name}\` | ${required.has(name) ? 'yes' : 'no'} | ${cell(typeOf(schema, doc))} |`);
    } else {
      out.push(`\`${typeOf(body, doc)}\``);
    }
    out.push('');
  }

  out.push('| status | meaning |', '|---|---|');
  for (const status of Object.keys(op.responses).sort())
    out.push(`| ${status} | ${cell(op.responses[status]!.description)} |`);
  out.push('');
  return out;
}

export function renderReference(doc: Schema): string {
  const byTag = new Map<string, string[]>();
  for (const path of Object.keys(doc.paths).sort()) {
    const item = doc.paths[path] as Record<string, Operation>;
    for (const method of METHOD_ORDER) {
      const op = item[method];
      if (!op) continue;
      const tag = op.tags?.[0] ?? 'other';
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push(...renderOperation(method, path, op, doc));
    }
  }
  const tags = [...byTag.keys()].sort();
  const lines = [
    '# API reference',
    '',
    '<!-- Generated from the OpenAPI document by `pnpm docs:reference`; do not edit by hand. -->',
    '',
    `Every operation of the Slipway API (version ${doc.info.version}), grouped by resource. Conventions,`,
    'authentication and errors are in [the API guide](api.md); a running api serves the same document',
    'as `/openapi.json` and browsable at `/docs`. Every path is also served under `/api-host`.',
    '',
    ...tags.map(
      (tag) =>
        `- [${tag}](#${tag
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-')})`,
    ),
    '',
  ];
  for (const tag of tags) lines.push(`## ${tag}`, '', ...byTag.get(tag)!);
  return `${lines.join('\n').trimEnd()}\n`;
}
