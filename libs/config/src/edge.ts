/**
 * The edge (docs/configuration.md, Edge; docs/operations.md, The edge): the one entry point that
 * serves every cloud-hosted deployment at a name of the apps domain.
 */
import Joi from 'joi';
import { trustProxyOf } from './server.js';
import { optional, setting, text, type ValuesOf } from './setting.js';

const port = Joi.number().integer().min(1).max(65_535);

/** A port, or `off`: the edge does not listen there. */
const portOrOff = (env: string, fallback: number, doc: string) =>
  setting<number | null>(env, Joi.alternatives(port, Joi.string().valid('off')).default(fallback), doc, {
    read: (raw) => (raw === 'off' ? null : Number(raw)),
  });

export const edgeSettings = {
  httpPort: portOrOff(
    'SLIPWAY_EDGE_HTTP_PORT',
    8180,
    "the edge's HTTP port (80 in the compose file and on Kubernetes); `off`: no edge, " +
      "and a deployment's `url` is its serving port on the runtime host, as before the edge",
  ),
  httpsPort: portOrOff(
    'SLIPWAY_EDGE_HTTPS_PORT',
    8443,
    "the edge's HTTPS port (443 in the compose file and on Kubernetes); `off`: no TLS",
  ),
  host: text('SLIPWAY_EDGE_HOST', '0.0.0.0', 'the interface the edge listens on'),
  appsDomain: setting<string>(
    'SLIPWAY_APPS_DOMAIN',
    Joi.string().hostname().lowercase().default('localhost'),
    'every cloud-hosted deployment answers at `<name>.<this domain>` ' +
      '(a wildcard DNS record `*.<domain>` must point at the edge; `localhost` works on the machine itself)',
  ),
  publicPort: optional<number>(
    'SLIPWAY_APPS_PUBLIC_PORT',
    port,
    "the port in deployments' URLs when an outer proxy listens on another port than the edge (80/443 are left out of URLs)",
    "the edge's port",
  ),
  upstreamHost: optional(
    'SLIPWAY_EDGE_UPSTREAM_HOST',
    Joi.string().hostname(),
    "where the edge reaches deployments' serving proxies (the deployer's host: `deployer` in the compose file)",
    'the runtime host (loopback when it binds all interfaces)',
  ),
  healthPort: setting<number | null>(
    'SLIPWAY_EDGE_HEALTH_PORT',
    Joi.alternatives(port, Joi.string().valid('off')).default('off'),
    "the edge's `/healthz`, `/readyz` (Postgres answers and the routes are read) and `/metrics` " +
      '(`slipway_edge_requests_total` by listener and outcome, `slipway_edge_routes`, and with ACME ' +
      '`slipway_edge_certificate_expiry_timestamp_seconds` and `slipway_edge_certificate_failures` by host); `off`: none',
    { read: (raw) => (raw === 'off' ? null : Number(raw)) },
  ),
  trustProxy: setting<boolean | number | string>(
    'SLIPWAY_EDGE_TRUST_PROXY',
    Joi.string().default('false'),
    'proxies in front of the edge whose `X-Forwarded-For` and `X-Forwarded-Proto` are believed ' +
      '(budgets and lockouts count per client address): `false` (the edge is the front door), `true`, ' +
      'a hop count, or addresses/subnets (`10.0.0.0/8`)',
    { read: trustProxyOf },
  ),
  tlsCertFile: optional(
    'SLIPWAY_TLS_CERT_FILE',
    Joi.string(),
    'a PEM certificate chain (leaf first) the edge serves for the apps domain (a wildcard `*.<domain>` certificate)',
    'none',
  ),
  tlsKeyFile: optional('SLIPWAY_TLS_KEY_FILE', Joi.string(), "that certificate's private key (PEM)", 'none'),
  acmeDirectoryUrl: optional(
    'SLIPWAY_ACME_DIRECTORY_URL',
    Joi.string().uri({ scheme: ['https', 'http'] }),
    "an ACME (RFC 8555) directory, e.g. Let's Encrypt's `https://acme-v02.api.letsencrypt.org/directory`: " +
      "the edge obtains and renews a certificate for each deployment's host itself " +
      '(HTTP-01 on its HTTP port, which must be reachable as port 80 of the host)',
    'none: no ACME',
  ),
  acmeEmail: optional(
    'SLIPWAY_ACME_EMAIL',
    Joi.string().email({ tlds: false }),
    "the contact address of the edge's ACME account (the CA's expiry and policy mail)",
    'none',
  ),
  acmeCaFile: optional(
    'SLIPWAY_ACME_CA_FILE',
    Joi.string(),
    "a PEM root certificate trusted, besides the public ones, for the ACME directory's own HTTPS (a private CA, " +
      'or a test server such as pebble)',
    'none',
  ),
  acmeDnsHook: optional(
    'SLIPWAY_ACME_DNS_HOOK',
    Joi.string(),
    'an executable that publishes and removes DNS TXT records at your DNS provider, run as ' +
      '`<hook> present|cleanup <record name> <value>`: the apps domain then gets one wildcard certificate ' +
      '(`*.<domain>`, ACME DNS-01) instead of one per deployment name (docs/operations.md, The edge)',
    'none: a certificate per name (HTTP-01)',
  ),
};

export type EdgeSettings = ValuesOf<typeof edgeSettings>;
