import Joi from 'joi';
import { listEnvelope, timestamp, uuid } from './common.schema.js';

const host = Joi.string()
  .min(1)
  .max(2048)
  .description("A domain name (`agent.example.com`); a URL's scheme, port and path are ignored");

export const domainParams = Joi.object({ deployment_id: uuid().required(), host: host.required() });

export const addDomainBody = Joi.object({ host: host.required() }).required().id('AddDomain');

export const removeDomainQuery = Joi.object({ host: host.required() });

export const domainResponse = Joi.object({
  host: Joi.string().required().description('Lower case, no port'),
  state: Joi.string().valid('pending_verification', 'issuing', 'active', 'failed').required(),
  error: Joi.string()
    .allow(null)
    .required()
    .description('Why it is not active yet: the missing TXT record, or the ACME error'),
  verification: Joi.object({
    type: Joi.string().valid('TXT').required(),
    name: Joi.string().required(),
    value: Joi.string().required(),
  })
    .allow(null)
    .required()
    .description('The DNS record that proves control of the host, until it is found; then null'),
  from_custom_url: Joi.boolean().required().description("The host of the deployment's `source_config.custom_url`"),
  created_at: timestamp().required(),
}).id('Domain');

export const domainList = listEnvelope(domainResponse, 'DomainList');

export type AddDomainBody = { host: string };
