import Joi from 'joi';
import { timestamp, uuid } from './common.schema.js';

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

const httpUrl = Joi.string().uri({ scheme: ['http', 'https'] });

/** Absolute https URL; plain http only for loopback hosts (local identity providers in dev). */
export const providerUrl = Joi.string()
  .max(2048)
  .uri({ scheme: ['http', 'https'] })
  .custom((value: string, helpers) => {
    // With abortEarly off joi runs this rule even when `uri` already failed: leave those values
    // to that one issue rather than reporting the same field twice.
    if (httpUrl.validate(value).error) return value;
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      // joi's RFC 3986 grammar lets through some URLs WHATWG refuses (e.g. port 99999).
      return helpers.error('string.uri');
    }
    if (url.protocol === 'https:' || LOOPBACK_HOSTS.has(url.hostname)) return value;
    return helpers.error('url.insecure');
  })
  .messages({ 'url.insecure': 'must use https (http is allowed only for loopback hosts)' });

export const CODE_CHALLENGE_METHODS = ['S256', 'plain'] as const;

export const providerParams = Joi.object({ provider_id: Joi.string().min(1).max(200).required() });

export const createOAuthProviderBody = Joi.object({
  provider_id: Joi.string()
    .min(1)
    .max(200)
    .pattern(/^[A-Za-z0-9][A-Za-z0-9._-]*$/)
    .required()
    .description('Chosen by the caller; unique in the organization'),
  name: Joi.string().min(1).max(200).required(),
  client_id: Joi.string().min(1).max(1000).required(),
  client_secret: Joi.string().min(1).max(4000).required().description('Write-only; never returned'),
  auth_url: providerUrl.required(),
  token_url: providerUrl.required(),
  uses_pkce: Joi.boolean().default(false),
  code_challenge_method: Joi.string()
    .valid(...CODE_CHALLENGE_METHODS)
    .allow(null)
    .default('S256'),
  provider_type: Joi.string().max(100).allow(null),
})
  .required()
  .id('CreateOAuthProvider');

/**
 * Every field optional. `null` on a field that cannot be empty means "leave as is" (the
 * FastAPI default-None convention the seed's "string or null" comes from); on
 * `code_challenge_method` and `provider_type`, which are nullable, it clears the value.
 */
export const patchOAuthProviderBody = Joi.object({
  name: Joi.string().min(1).max(200).allow(null),
  client_id: Joi.string().min(1).max(1000).allow(null),
  client_secret: Joi.string().min(1).max(4000).allow(null).description('Write-only; never returned'),
  auth_url: providerUrl.allow(null),
  token_url: providerUrl.allow(null),
  uses_pkce: Joi.boolean().allow(null),
  code_challenge_method: Joi.string()
    .valid(...CODE_CHALLENGE_METHODS)
    .allow(null),
  provider_type: Joi.string().max(100).allow(null),
})
  .required()
  .id('PatchOAuthProvider');

export const oauthProviderResponse = Joi.object({
  id: uuid().required(),
  organization_id: uuid().required(),
  provider_id: Joi.string().required(),
  name: Joi.string().required(),
  client_id: Joi.string().required(),
  auth_url: Joi.string().required(),
  token_url: Joi.string().required(),
  uses_pkce: Joi.boolean().required(),
  code_challenge_method: Joi.string().allow(null).required(),
  provider_type: Joi.string().allow(null),
  created_at: timestamp().required(),
  updated_at: timestamp().required(),
}).id('OAuthProvider');

export const oauthProviderList = Joi.array().items(oauthProviderResponse).id('OAuthProviderList');

export interface CreateOAuthProviderBody {
  provider_id: string;
  name: string;
  client_id: string;
  client_secret: string;
  auth_url: string;
  token_url: string;
  uses_pkce: boolean;
  code_challenge_method: string | null;
  provider_type?: string | null;
}

export type PatchOAuthProviderBody = {
  [K in Exclude<keyof CreateOAuthProviderBody, 'provider_id'>]?: CreateOAuthProviderBody[K] | null;
};
