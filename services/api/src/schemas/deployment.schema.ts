import Joi from 'joi';
import type { NamedSecret } from '@slipway/crypto';
import type { PreviewSettings } from '@slipway/db';
import {
  DEFAULT_APPROVAL_LABEL,
  DEPLOYMENT_NAME,
  DEPLOYMENT_NAME_MAX,
  DEPLOYMENT_NAME_MIN,
  DEPLOYMENT_SOURCES,
  DEPLOYMENT_STATUSES,
  DEPLOYMENT_TYPES,
  DNS1123_LABEL,
  RESERVED_SECRET_NAMES,
  RESERVED_SECRET_PREFIXES,
  reservedSecretNameReason,
  REVISION_STATUSES,
  SOURCE_ALIASES,
} from '@slipway/domain';
import { paginationQuery, uuid } from './common.schema.js';
import { resourceSpec } from './resource-spec.schema.js';

/** `source_config.previews` as a client sends it: secret overrides with their values. */
export type PreviewSettingsInput = Omit<PreviewSettings, 'secret_names' | 'secrets_sealed'> & {
  secrets?: NamedSecret[] | null;
};

/** A query parameter holding a comma-separated list: `a,b` becomes `['a', 'b']`, then each item is validated. */
const CommaJoi = Joi.extend((joi) => ({
  type: 'commaList',
  base: joi.array(),
  coerce: {
    from: 'string',
    method: (value: string) => ({
      value: value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    }),
  },
}));
const commaList = (item: Joi.Schema) => CommaJoi.commaList().items(item).max(100);

const SOURCE_INPUTS = [...DEPLOYMENT_SOURCES, ...Object.keys(SOURCE_ALIASES)];

export const deploymentName = Joi.string()
  .min(DEPLOYMENT_NAME_MIN)
  .max(DEPLOYMENT_NAME_MAX)
  .pattern(DEPLOYMENT_NAME)
  .description('Lowercase letters, digits and dashes; starts with a letter');

const relativePath = Joi.string()
  .max(1024)
  .pattern(/^(?!\/)(?!.*(^|\/)\.\.(\/|$)).+$/)
  .description('Path inside the repository (relative, no `..`)');

const RESERVED_LIST = [...RESERVED_SECRET_NAMES, ...RESERVED_SECRET_PREFIXES.map((p) => `${p}*`)].join(', ');

/** Environment names the runtime or npm sets, or that would subvert the sandbox, are refused with the reason (docs/api.md, Secrets). */
const secretName = Joi.string()
  .max(256)
  .pattern(/^[A-Za-z_][A-Za-z0-9_]*$/)
  .custom((name: string, helpers) => {
    const reason = reservedSecretNameReason(name);
    return reason ? helpers.error('secret.reserved', { reason }) : name;
  })
  .messages({ 'secret.reserved': `'{#value}' is a reserved name: {#reason} (reserved: ${RESERVED_LIST})` })
  .description(`An environment variable name; not one of ${RESERVED_LIST}`);

const secret = Joi.object({
  name: secretName.required(),
  value: Joi.string().allow('').max(65536).required(),
}).id('Secret');

const secrets = Joi.array().items(secret).unique('name').max(500);

const listenerConfig = Joi.object({
  k8s_namespace: Joi.string().max(63).pattern(DNS1123_LABEL).allow(null),
}).allow(null);

/** A repohost parent's previews per pull request (docs/api.md, Previews). */
const previewSettings = Joi.object({
  enabled: Joi.boolean().default(true),
  ttl_hours: Joi.number()
    .integer()
    .min(1)
    .max(720)
    .default(72)
    .description('A preview is torn down this long after its last rollout'),
  database: Joi.string()
    .valid('empty', 'copy')
    .default('empty')
    .description(
      "'empty': each preview gets an empty database of its own; 'copy': a copy of the parent's, made when the preview is created",
    ),
  max_active: Joi.number()
    .integer()
    .min(1)
    .max(50)
    .default(5)
    .description('Past this, a new preview replaces the least recently used one'),
  approval_label: Joi.string()
    .trim()
    .min(1)
    .max(50)
    .allow(null)
    .default(DEFAULT_APPROVAL_LABEL)
    .description(
      "The forge label whose adding approves a fork's pull request at its current head (null: only an admin's approve)",
    ),
  resource_spec: resourceSpec.allow(null).description("Overrides of the parent's resource_spec for its previews"),
  secrets: Joi.array()
    .items(secret)
    .unique('name')
    .max(100)
    .allow(null)
    .description(
      "Overrides of the parent's secrets for its previews (by name); stored sealed, shown masked; a masked value keeps the stored one",
    ),
})
  .allow(null)
  .id('PreviewSettings');

const sourceConfigFields = {
  integration_id: uuid().allow(null),
  repo_url: Joi.string().max(2048).allow(null),
  build_on_push: Joi.boolean().allow(null),
  custom_url: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .max(2048)
    .allow(null),
  resource_spec: resourceSpec.allow(null),
  listener_id: uuid().allow(null),
  listener_config: listenerConfig,
  install_command: Joi.string().max(4096).allow(null),
  build_command: Joi.string().max(4096).allow(null),
  deployment_type: Joi.string()
    .valid(...DEPLOYMENT_TYPES)
    .allow(null),
  serving_auth: Joi.string()
    .valid('api_key', 'none')
    .allow(null)
    .description(
      "Who may call an agent server's serving URL: 'api_key' (the default) requires a workspace API key in " +
        "X-Api-Key; 'none' lets anyone in (only an admin may set it)",
    ),
  tracing: Joi.boolean()
    .allow(null)
    .description(
      "Whether instances send their traces to the deployment's tracing project (LANGSMITH_* variables, " +
        'docs/tracing.md); false turns it off. Default on; a change rolls out a new revision',
    ),
  previews: previewSettings,
};

const sourceRevisionConfigFields = {
  repo_ref: Joi.string().max(255).allow(null),
  graph_config_path: relativePath.allow(null),
  langgraph_config_path: relativePath.allow(null).description('Alias of graph_config_path'),
  image_uri: Joi.string().max(1024).pattern(/^\S+$/).allow(null),
  repo_commit_sha: Joi.string()
    .pattern(/^[0-9a-f]{7,64}$/)
    .allow(null),
  source_tarball_path: Joi.string().max(1024).allow(null),
};

export const createDeploymentBody = Joi.object({
  name: deploymentName.required(),
  source: Joi.string()
    .valid(...SOURCE_INPUTS)
    .required()
    .description(
      'repohost | external_container | upload | internal_docker (aliases: github, external_docker, internal_source)',
    ),
  source_config: Joi.object(sourceConfigFields).required().id('SourceConfigInput'),
  source_revision_config: Joi.object(sourceRevisionConfigFields).required().id('SourceRevisionConfigInput'),
  secrets: secrets.default([]),
  deployment_type: Joi.string()
    .valid(...DEPLOYMENT_TYPES)
    .allow(null),
  image_version: Joi.string().max(255).allow(null),
})
  .required()
  // What /docs offers to send (Swagger UI would otherwise make one up from the schema: `"name": "string"`, made-up ids);
  // openapi.test.ts posts it, so it stays a request this server accepts.
  .example({
    name: 'my-agent',
    source: 'external_container',
    source_config: { resource_spec: { min_scale: 1, max_scale: 2, cpu: 1, memory_mb: 1024 } },
    source_revision_config: { image_uri: 'docker.io/langchain/langgraph-api:3.11' },
    secrets: [{ name: 'OPENAI_API_KEY', value: 'sk-replace-me' }],
  })
  .id('CreateDeployment');

export const patchDeploymentBody = Joi.object({
  name: deploymentName,
  source: Joi.string().valid(...SOURCE_INPUTS),
  source_config: Joi.object(sourceConfigFields).allow(null),
  source_revision_config: Joi.object(sourceRevisionConfigFields).allow(null),
  secrets: secrets.allow(null),
  revision_source: Joi.string()
    .valid(...SOURCE_INPUTS)
    .allow(null)
    .description('CLI compatibility: `internal_source` for an uploaded tarball, `internal_docker` for a pushed image'),
  image_version: Joi.string().max(255).allow(null),
  deployment_type: Joi.string()
    .valid(...DEPLOYMENT_TYPES)
    .allow(null),
})
  .required()
  .id('PatchDeployment');

export const deploymentParams = Joi.object({ deployment_id: uuid().required() });
export const revisionParams = Joi.object({ deployment_id: uuid().required(), revision_id: uuid().required() });

export const deleteDeploymentQuery = Joi.object({
  delete_tracing_project: Joi.boolean().default(false),
});

/** `DELETE /v2/deployments?deployment_ids=…` (C13): repeated or comma-separated, 1–100 ids. */
export const bulkDeleteQuery = Joi.object({
  deployment_ids: commaList(uuid()).min(1).required(),
  delete_tracing_project: Joi.boolean().default(false),
});

export const bulkDeleteResponse = Joi.object({
  results: Joi.array().items(
    Joi.object({
      deployment_id: Joi.string().required(),
      status: Joi.number().valid(204, 400, 404).required(),
      detail: Joi.string(),
    }).id('BulkDeleteResult'),
  ),
}).id('BulkDeleteResponse');

export const freeCountResponse = Joi.object({ count: Joi.number().integer().min(0).required() }).id('FreeCount');

export const listDeploymentsQuery = Joi.object({
  ...paginationQuery,
  name_contains: Joi.string().max(255).allow(''),
  name: Joi.string().max(255),
  status: Joi.string().valid(...DEPLOYMENT_STATUSES),
  remote_reconciled: Joi.boolean(),
  tag_value_ids: commaList(uuid()),
  image_version: Joi.string().max(255),
  deployment_type: Joi.string().valid(...DEPLOYMENT_TYPES),
  deployment_ids: commaList(uuid()),
  is_preview: Joi.boolean().description('true: only previews of pull requests; false: no previews (default: both)'),
  preview_of: uuid().description('Only the previews of this deployment'),
})
  // A filter this server does not implement (e.g. agent_id) is a 422 naming it, never silently ignored.
  .unknown(false);

export const listRevisionsQuery = Joi.object({
  ...paginationQuery,
  remote_reconciled: Joi.boolean().description(
    'true: only if the deployment is reconciled by a listener; false: only if not',
  ),
  status: commaList(Joi.string().valid(...REVISION_STATUSES)),
});

export interface SourceConfigInput {
  integration_id?: string | null;
  repo_url?: string | null;
  build_on_push?: boolean | null;
  custom_url?: string | null;
  resource_spec?: Record<string, unknown> | null;
  listener_id?: string | null;
  listener_config?: { k8s_namespace?: string | null } | null;
  install_command?: string | null;
  build_command?: string | null;
  deployment_type?: string | null;
  serving_auth?: 'api_key' | 'none' | null;
  tracing?: boolean | null;
  previews?: PreviewSettingsInput | null;
}

export interface SourceRevisionConfigInput {
  repo_ref?: string | null;
  graph_config_path?: string | null;
  langgraph_config_path?: string | null;
  image_uri?: string | null;
  repo_commit_sha?: string | null;
  source_tarball_path?: string | null;
}

export interface CreateDeploymentBody {
  name: string;
  source: string;
  source_config: SourceConfigInput;
  source_revision_config: SourceRevisionConfigInput;
  secrets: Array<{ name: string; value: string }>;
  deployment_type?: string | null;
  image_version?: string | null;
}

export interface PatchDeploymentBody {
  name?: string;
  source?: string;
  source_config?: SourceConfigInput | null;
  source_revision_config?: SourceRevisionConfigInput | null;
  secrets?: Array<{ name: string; value: string }> | null;
  revision_source?: string | null;
  image_version?: string | null;
  deployment_type?: string | null;
}

export interface ListDeploymentsQuery {
  limit: number;
  offset: number;
  name_contains?: string;
  name?: string;
  status?: string;
  remote_reconciled?: boolean;
  tag_value_ids?: string[];
  image_version?: string;
  deployment_type?: string;
  deployment_ids?: string[];
  is_preview?: boolean;
  preview_of?: string;
}
