import { createPrivateKey } from 'node:crypto';
import path from 'node:path';
import Joi from 'joi';
import { GITHUB_API_URL, PROVIDERS, type ProviderKind } from '@slipway/source';
import { listEnvelope, paginationQuery, timestamp, uuid } from './common.schema.js';

/**
 * The form only; where it may lead (https to a public address, unless allow-listed in
 * SLIPWAY_OUTBOUND_ALLOW_HOSTS) is checked by the service after DNS, and again at every fetch.
 */
const apiUrl = Joi.string()
  .max(2048)
  .uri({ scheme: ['http', 'https'] })
  .description(
    'REST API base URL: https to a public address (plain http or private addresses only for hosts allow-listed ' +
      'in SLIPWAY_OUTBOUND_ALLOW_HOSTS)',
  );

const absolutePath = Joi.string()
  .max(4096)
  .custom((value: string, helpers) => (path.isAbsolute(value) ? path.normalize(value) : helpers.error('path.relative')))
  .messages({ 'path.relative': 'must be an absolute path' });

const pemPrivateKey = Joi.string()
  .max(16_384)
  .custom((value: string, helpers) => {
    try {
      createPrivateKey(value);
      return value;
    } catch {
      // The message must never quote the value: it is a secret.
      return helpers.error('key.pem');
    }
  })
  .messages({ 'key.pem': 'must be a PEM-encoded private key (the .pem file GitHub generated for the App)' });

const token = Joi.string().min(1).max(1000).pattern(/^\S+$/).description('Write-only; never returned');

export const localConfig = Joi.object({
  root: absolutePath
    .required()
    .description('Directory whose direct children are git repositories; must lie under SLIPWAY_LOCAL_REPOS_ROOT'),
})
  .required()
  .id('LocalIntegrationConfig');

export const githubConfig = Joi.object({
  api_url: apiUrl.default(GITHUB_API_URL),
  token,
  app_id: Joi.alternatives()
    .try(
      Joi.number().integer().min(1),
      Joi.string()
        .min(1)
        .max(100)
        .pattern(/^[A-Za-z0-9._-]+$/),
    )
    .description('GitHub App ID (or client ID)'),
  private_key: pemPrivateKey.description('GitHub App private key (PEM); write-only, never returned'),
  installation_id: Joi.number().integer().min(1).description('Installation of the App whose repositories are listed'),
})
  .xor('token', 'app_id')
  .and('app_id', 'private_key', 'installation_id')
  .messages({
    'object.missing': 'a github integration needs either token, or app_id, private_key and installation_id',
    'object.xor': 'give either token or a GitHub App (app_id, private_key, installation_id), not both',
    'object.and': 'a GitHub App needs app_id, private_key and installation_id together',
  })
  .required()
  .id('GitHubIntegrationConfig');

export const giteaConfig = Joi.object({
  api_url: apiUrl.required().description('Base URL of the Gitea or Forgejo instance'),
  token: token.required(),
})
  .required()
  .id('GiteaIntegrationConfig');

export const integrationParams = Joi.object({ integration_id: uuid().required() });

export const createIntegrationBody = Joi.object({
  provider: Joi.string()
    .valid(...PROVIDERS)
    .required(),
  name: Joi.string()
    .min(1)
    .max(100)
    .pattern(/^[A-Za-z0-9][A-Za-z0-9._-]*$/)
    .required()
    .description('Unique in the workspace; the `owner` of `local` repositories'),
  config: Joi.alternatives()
    .conditional('provider', { is: 'local', then: localConfig })
    .conditional('provider', { is: 'github', then: githubConfig })
    .conditional('provider', { is: 'gitea', then: giteaConfig, otherwise: Joi.object() }),
})
  .required()
  .id('CreateIntegration');

export const listIntegrationsQuery = Joi.object(paginationQuery);

const integrationFields = {
  id: uuid().required(),
  tenant_id: uuid().required(),
  provider: Joi.string()
    .valid(...PROVIDERS)
    .required(),
  name: Joi.string().required(),
  config: Joi.object({
    root: Joi.string(),
    api_url: Joi.string(),
    app_id: Joi.alternatives().try(Joi.number().integer(), Joi.string()),
    installation_id: Joi.number().integer(),
  })
    .required()
    .description('The non-secret settings; tokens and keys are never returned'),
  webhook_url: Joi.string().uri().required().description('Where the host sends push events (HMAC-SHA256 signed)'),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
};

export const integrationResponse = Joi.object(integrationFields).id('Integration');

export const createdIntegrationResponse = Joi.object({
  ...integrationFields,
  webhook_secret: Joi.string().required().description('HMAC secret of the push webhook; shown only in this response'),
}).id('CreatedIntegration');

export const integrationList = listEnvelope(integrationResponse, 'IntegrationList');

export const repositoryEntry = Joi.object({
  host_integration_id: uuid().required().description('Use as `source_config.integration_id`'),
  id: Joi.number().integer().required(),
  name: Joi.string().required(),
  owner: Joi.string().allow('').required(),
  url: Joi.string().required().description('Use as `source_config.repo_url`'),
  default_branch: Joi.string().required().description('Default `source_revision_config.repo_ref`'),
}).id('RepositoryEntry');

export const repositoryList = Joi.array().items(repositoryEntry).id('RepositoryList');

export const branchesQuery = Joi.object({
  repo_url: Joi.string().min(1).max(2048).required().description('A repository `url` from GET .../repos'),
});

export const branchEntry = Joi.object({
  name: Joi.string().required().description('Use as `source_revision_config.repo_ref`'),
  commit_sha: Joi.string().required().description('The commit the branch points at now'),
  is_default: Joi.boolean().required().description("Whether this is the repository's default branch (listed first)"),
}).id('RepositoryBranch');

export const branchList = Joi.array().items(branchEntry).max(100).id('RepositoryBranchList');

/** The headers a push webhook reads (documented; any value is accepted, the signature decides). */
export const webhookHeaders = Joi.object({
  'x-hub-signature-256': Joi.string().description(
    '`sha256=<hex HMAC-SHA256 of the raw body under the webhook secret>`',
  ),
  'x-github-event': Joi.string().description('`push` builds; `ping` answers pong; others are recorded and ignored'),
  'x-gitea-event': Joi.string().description('As X-GitHub-Event, from Gitea/Forgejo'),
  'x-github-delivery': Joi.string().description('Delivery id; a re-delivery never builds twice'),
  'x-gitea-delivery': Joi.string(),
});

export const deliveryResponse = Joi.object({
  id: uuid().required(),
  integration_id: uuid().required(),
  delivery_id: Joi.string().allow(null).required(),
  event: Joi.string().allow(null).required(),
  ref: Joi.string().allow(null).required(),
  signature_valid: Joi.boolean().required(),
  status_code: Joi.number().integer().required().description('What the webhook answered (102 while still processing)'),
  outcome: Joi.string().required(),
  revision_ids: Joi.array().items(uuid()).required(),
  received_at: timestamp().required(),
}).id('WebhookDelivery');

export const deliveryList = listEnvelope(deliveryResponse, 'WebhookDeliveryList');
export const listDeliveriesQuery = Joi.object(paginationQuery);

export interface CreateIntegrationBody {
  provider: ProviderKind;
  name: string;
  config: {
    root?: string;
    api_url?: string;
    token?: string;
    app_id?: string | number;
    private_key?: string;
    installation_id?: number;
  };
}
