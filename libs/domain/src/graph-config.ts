import Joi from 'joi';

/** A graph's import string: `<file>:<export>`, e.g. `./src/agent.ts:graph`. */
const importString = Joi.string()
  .pattern(/^[^:]+:[^:]+$/)
  .messages({ 'string.pattern.base': `{{#label}} must be an import string '<file>:<export>' (got '{{#value}}')` });

/** Node versions the graph config may ask for (those the published CLIs accept). */
export const GRAPH_NODE_VERSIONS = ['20', '22', '24'] as const;

const schema = Joi.object({
  graphs: Joi.object()
    .pattern(
      Joi.string(),
      Joi.alternatives()
        .try(importString, Joi.object({ path: importString.required(), description: Joi.string() }).unknown(true))
        .messages({
          'alternatives.types': `{{#label}} must be an import string '<file>:<export>' or an object with a 'path'`,
        }),
    )
    .min(1)
    .required()
    .messages({ 'object.min': '{{#label}} must name at least one graph' }),
  dependencies: Joi.array().items(Joi.string()),
  env: Joi.alternatives()
    .try(Joi.string(), Joi.object().pattern(Joi.string(), Joi.string()), Joi.array().items(Joi.string()))
    .messages({
      'alternatives.types': '{{#label}} must be a path to an env file or an object of name → value strings',
      'alternatives.match': '{{#label}} must be a path to an env file or an object of name → value strings',
    }),
  // A number (`20`) is what people write too; it means the same.
  node_version: Joi.alternatives()
    .try(Joi.string().valid(...GRAPH_NODE_VERSIONS), Joi.number().valid(...GRAPH_NODE_VERSIONS.map(Number)))
    .messages({
      'alternatives.match': `{{#label}} must be one of ${GRAPH_NODE_VERSIONS.map((v) => `"${v}"`).join(', ')}`,
    }),
  python_version: Joi.string(),
  dockerfile_lines: Joi.array().items(Joi.string()),
  docker_compose_file: Joi.string(),
  ui: Joi.object().pattern(Joi.string(), Joi.string()),
  store: Joi.object(),
  auth: Joi.object(),
  http: Joi.object(),
})
  .unknown(true)
  .required();

/** The graph config file (langgraph.json-compatible) after validation; other keys are kept as given. */
export interface GraphConfig {
  /** Graph name → import string (objects are reduced to their `path`). */
  graphs: Record<string, string>;
  dependencies?: string[];
  env?: string | string[] | Record<string, string>;
  node_version?: string;
  dockerfile_lines?: string[];
  [key: string]: unknown;
}

/** A graph config that does not parse or validate; the message lists every problem. */
export class GraphConfigError extends Error {
  constructor(
    message: string,
    readonly problems: string[],
  ) {
    super(message);
    this.name = 'GraphConfigError';
  }
}

/**
 * Validates a parsed graph config. Every problem is reported at once, each naming its key
 * (`"graphs.agent" must be an import string …`), so one failed build shows all of them.
 */
export function validateGraphConfig(input: unknown, fileName = 'langgraph.json'): GraphConfig {
  const { value, error } = schema.validate(input, { abortEarly: false, convert: false });
  if (error) {
    const problems = error.details.map((d) => d.message);
    throw new GraphConfigError(`Graph config file '${fileName}' is invalid: ${problems.join('; ')}.`, problems);
  }
  const graphs = Object.fromEntries(
    Object.entries(value.graphs as Record<string, string | { path: string }>).map(([name, g]) => [
      name,
      typeof g === 'string' ? g : g.path,
    ]),
  );
  const config: GraphConfig = { ...value, graphs };
  if (value.node_version !== undefined) config.node_version = String(value.node_version);
  return config;
}

/** Parses the text of a graph config file (JSON) and validates it. */
export function parseGraphConfig(text: string, fileName = 'langgraph.json'): GraphConfig {
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch (err) {
    const problem = `not valid JSON (${(err as Error).message})`;
    throw new GraphConfigError(`Graph config file '${fileName}' is ${problem}.`, [problem]);
  }
  return validateGraphConfig(input, fileName);
}
