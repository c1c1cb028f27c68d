/**
 * Custom domains of deployments (docs/api.md, Domains; docs/operations.md, The edge): how a
 * workspace proves it controls a host before the edge routes it.
 */
import Joi from 'joi';
import { dnsServers } from './sandbox.js';
import { oneOf, setting } from './setting.js';

export const domainSettings = {
  verification: oneOf(
    'SLIPWAY_DOMAIN_VERIFICATION',
    ['dns', 'off'],
    'dns',
    '`dns`: a custom domain is routed once the TXT record `_slipway-challenge.<host>` holds its verification ' +
      'token; `off`: at once, for closed networks and tests (any workspace may then claim any free host; ' +
      'warned at start)',
  ),
  dnsServers: dnsServers(
    'SLIPWAY_DOMAIN_DNS_SERVERS',
    'comma-separated resolvers (`ip` or `ip:port`) the edge asks for verification TXT records',
  ),
  verifyEveryMs: setting<number>(
    'SLIPWAY_DOMAIN_VERIFY_INTERVAL_MS',
    Joi.number().integer().min(500).default(30_000),
    'how often the edge looks again for the TXT record of a domain still pending verification',
  ),
};
