import Joi from 'joi';
import {
  DEPLOYMENT_STATUSES,
  DEPLOYMENT_TYPES,
  HOSTED_SOURCE_NAMES,
  DEPLOYMENT_SOURCES,
  REVISION_STATUSES,
  REVISION_TRIGGERS,
} from '@slipway/domain';
import { listEnvelope, timestamp, uuid } from './common.schema.js';
import { resourceSpec } from './resource-spec.schema.js';

/**
 * What the deployment routes answer (docs/api.md, Deployments and Revisions): a deployment and a
 * revision, and their lists; the bodies and queries they take are in deployment.schema.ts.
 */

/** Responses name sources canonically, or as the hosted control plane does (`SLIPWAY_SOURCE_NAMES=hosted`). */
const SOURCE_OUTPUTS = [...new Set([...DEPLOYMENT_SOURCES, ...Object.values(HOSTED_SOURCE_NAMES)])];

const sourceConfigResponse = Joi.object({
  integration_id: uuid().allow(null),
  repo_url: Joi.string().allow(null),
  build_on_push: Joi.boolean().allow(null),
  custom_url: Joi.string().allow(null),
  resource_spec: resourceSpec,
  listener_id: uuid().allow(null),
  listener_config: Joi.object({ k8s_namespace: Joi.string().allow(null) }).allow(null),
  install_command: Joi.string().allow(null),
  build_command: Joi.string().allow(null),
  deployment_type: Joi.string().allow(null),
  serving_auth: Joi.string().allow(null),
  tracing: Joi.boolean().allow(null),
  previews: Joi.object({
    enabled: Joi.boolean(),
    ttl_hours: Joi.number().integer(),
    database: Joi.string(),
    max_active: Joi.number().integer(),
    approval_label: Joi.string().allow(null),
    resource_spec: Joi.object().unknown(true).allow(null),
    secrets: Joi.array().items(Joi.object({ name: Joi.string(), value: Joi.string().valid('********') })),
  }).allow(null),
}).id('SourceConfig');

const sourceRevisionConfigResponse = Joi.object({
  repo_ref: Joi.string().allow(null),
  graph_config_path: Joi.string().allow(null),
  image_uri: Joi.string().allow(null),
  repo_commit_sha: Joi.string().allow(null),
  repo_commit_message: Joi.string()
    .allow(null, '')
    .description("The built commit's message (its first 2,000 characters), from the build's checkout"),
  repo_commit_author: Joi.string().allow(null, '').description("The built commit's author's name"),
  source_tarball_path: Joi.string().allow(null),
}).id('SourceRevisionConfig');

export const deploymentResponse = Joi.object({
  id: uuid().required(),
  name: Joi.string().required(),
  source: Joi.string()
    .valid(...SOURCE_OUTPUTS)
    .required(),
  source_config: sourceConfigResponse.required(),
  source_revision_config: sourceRevisionConfigResponse.required(),
  secrets: Joi.array()
    .items(Joi.object({ name: Joi.string(), value: Joi.string().valid('********') }))
    .required(),
  status: Joi.string()
    .valid(...DEPLOYMENT_STATUSES)
    .required(),
  deployment_type: Joi.string()
    .valid(...DEPLOYMENT_TYPES)
    .allow(null)
    .required(),
  latest_revision_id: uuid().allow(null).required(),
  active_revision_id: uuid().allow(null).required(),
  image_version: Joi.string().allow(null).required(),
  tenant_id: uuid().required(),
  tracing_project_id: uuid().allow(null).required(),
  tracer_session_id: uuid()
    .allow(null)
    .required()
    .description(
      "The same id as tracing_project_id, under the hosted API's name (the project of GET " +
        '/v2/deployments/{id}/traces and of /api/v1/sessions)',
    ),
  agent_server: Joi.boolean()
    .allow(null)
    .required()
    .description(
      'Whether this deployment is an agent server, whose serving URL requires a workspace API key unless ' +
        "source_config.serving_auth is 'none': from the active revision, else the latest (a build says it of " +
        "its artifact; an image's rollout says it of an image with LANGSERVE_GRAPHS in its environment or the " +
        'label dev.slipway.agent-server=true); always true for internal_docker; null until known (a revision ' +
        'built or an image rolled out)',
    ),
  url: Joi.string().allow(null).required(),
  is_preview: Joi.boolean()
    .required()
    .description('A preview of a pull request of another deployment (docs/api.md, Previews)'),
  preview: Joi.object({
    parent_id: uuid().allow(null).required(),
    pull_request: Joi.object({
      number: Joi.number().integer().required(),
      head_ref: Joi.string().required(),
      head_sha: Joi.string().allow(null).required(),
      url: Joi.string().allow(null).required(),
    }).required(),
    expires_at: timestamp().allow(null).required(),
    feedback: Joi.object({
      reported_state: Joi.string()
        .valid('pending', 'success', 'failure')
        .allow(null)
        .required()
        .description('What the pull request was last told (its commit status)'),
      attempts: Joi.number()
        .integer()
        .required()
        .description('Failed attempts at telling the current state (given up after 5)'),
      last_error: Joi.string()
        .allow(null)
        .required()
        .description("The forge's last refusal, kept until a report goes through"),
      next_attempt_at: timestamp().required(),
      updated_at: timestamp().required(),
    })
      .allow(null)
      .required()
      .description(
        'A forge-opened preview: what Slipway last told its pull request; null for others (and before the first report)',
      ),
  })
    .allow(null)
    .required(),
  tag_value_ids: Joi.array().items(uuid()).required(),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
}).id('Deployment');

export const deploymentList = listEnvelope(deploymentResponse, 'DeploymentList');

/** A revision as the API shows it (docs/api.md, Revisions). */
export const revisionResponse = Joi.object({
  id: uuid().required(),
  deployment_id: uuid().required(),
  status: Joi.string()
    .valid(...REVISION_STATUSES)
    .required(),
  status_message: Joi.string().allow(null).required(),
  source: Joi.string()
    .valid(...SOURCE_OUTPUTS)
    .required(),
  source_revision_config: sourceRevisionConfigResponse.required(),
  image_uri: Joi.string().allow(null).required(),
  image_digest: Joi.string()
    .allow(null)
    .required()
    .description(
      'internal_docker: the manifest digest the revision runs (a tag is resolved when the revision is made)',
    ),
  resource_spec: resourceSpec.required(),
  secrets: Joi.array()
    .items(Joi.object({ name: Joi.string() }))
    .required()
    .description('Names only'),
  secret_fingerprints: Joi.array()
    .items(Joi.object({ name: Joi.string().required(), fingerprint: Joi.string().allow(null).required() }))
    .allow(null)
    .required()
    .description(
      "Each secret's keyed fingerprint (16 opaque characters): equal in two revisions of the deployment " +
        'when the value is the same (under the same secrets key); never a value or a plain hash. Null for ' +
        'revisions made before fingerprints were kept: whether a value changed is then unknown',
    ),
  redeployed_from: uuid().allow(null).required(),
  trigger: Joi.string()
    .valid(...REVISION_TRIGGERS)
    .allow(null)
    .required()
    .description(
      'Why it exists: create, patch, push, upload (a source tarball), image_push (a built-in registry ' +
        'image), redeploy, preview, api_revision (POST …/revisions); null for revisions made before this was ' +
        'recorded',
    ),
  created_by: Joi.object({
    kind: Joi.string().valid('api_key', 'user', 'system').required(),
    id: Joi.string().allow(null).required(),
    name: Joi.string().allow(null).required(),
  })
    .allow(null)
    .required()
    .description(
      "Who made it: an API key (its id and description), a user (its token's subject and name), or Slipway " +
        '(what set it off: a push, a pull request)',
    ),
  artifact_pruned_at: timestamp()
    .allow(null)
    .required()
    .description(
      'When retention pruned the built artifact (docs/operations.md, Quotas and retention); a redeploy then rebuilds it',
    ),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
}).id('Revision');

export const revisionList = listEnvelope(revisionResponse, 'RevisionList');
