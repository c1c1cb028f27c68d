import Joi from 'joi';

export const pushTokenResponse = Joi.object({
  token: Joi.string()
    .required()
    .description(
      'Use as the password of user `oauth2accesstoken` (`docker login -u oauth2accesstoken --password-stdin`)',
    ),
  registry_url: Joi.string().required().description('`<host:port>/<prefix>`: push to `<registry_url>/<name>:<tag>`'),
  expires_at: Joi.string().isoDate().required(),
}).id('PushToken');

/** What distribution's token clients send (docs/api.md, Images and the built-in registry). */
export const registryTokenQuery = Joi.object({
  service: Joi.string().max(255),
  scope: Joi.alternatives(Joi.string().max(4096), Joi.array().items(Joi.string().max(4096)).max(50)),
  account: Joi.string().max(255),
  client_id: Joi.string().max(255),
  offline_token: Joi.string().max(16),
});

export const registryTokenResponse = Joi.object({
  token: Joi.string().required(),
  access_token: Joi.string().required(),
  expires_in: Joi.number().integer().required(),
  issued_at: Joi.string().isoDate().required(),
}).id('RegistryToken');

export const registryEventsBody = Joi.object({ events: Joi.array().items(Joi.object().unknown(true)).max(10_000) })
  .unknown(true)
  .required()
  .id('RegistryEvents');
