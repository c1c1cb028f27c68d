import type { Config } from '@slipway/config';
import { secretsCodec } from '@slipway/crypto';
import {
  DeploymentDomainRepository,
  EdgeCertificateRepository,
  EdgeRouteRepository,
  type DataSource,
} from '@slipway/db';
import type { Logger } from '@slipway/logging';
import type { RouteTable } from '../route-table.js';
import { AcmeIssuer } from './acme-issuer.js';
import { CertificateKeeper } from './certificate-keeper.js';
import { DnsHook } from './dns-hook.js';

/**
 * The edge's ACME certificates (docs/operations.md, The edge): one for each verified custom
 * domain, and for the apps domain's names unless the operator's (wildcard) certificate covers
 * them: one wildcard `*.<domain>` through the operator's DNS hook (DNS-01) when there is one, else
 * one per deployment name (HTTP-01); never for `localhost` names. A custom domain's certificate state is
 * its state in the API (`issuing`, `active`, `failed` with the CA's error).
 */
export function automaticCertificates(
  config: Readonly<Config>,
  dataSource: DataSource,
  routes: RouteTable,
  log: Logger,
) {
  const repo = new EdgeCertificateRepository(dataSource.manager);
  const codec = secretsCodec(config);
  const issuer = new AcmeIssuer({
    directoryUrl: config.edge.acmeDirectoryUrl!,
    email: config.edge.acmeEmail,
    caFile: config.edge.acmeCaFile,
    codec,
    repo,
    dnsHook: config.edge.acmeDnsHook ? new DnsHook(config.edge.acmeDnsHook) : undefined,
  });
  const names = !config.edge.tlsCertFile;
  const perName = async () =>
    (await new EdgeRouteRepository(dataSource.manager).all()).map((r) => `${r.edgeName}.${config.edge.appsDomain}`);
  const keeper = new CertificateKeeper({
    wanted: async () => [
      ...routes.customHosts,
      ...(!names ? [] : config.edge.acmeDnsHook ? [`*.${config.edge.appsDomain}`] : await perName()),
    ],
    issuer,
    repo,
    codec,
    log,
    onState: (host, state, error) => {
      // A verified domain is `issuing` already; a renewal of an active one keeps it `active`.
      // The apps domain's wildcard is no domain of the API: its failures are the edge's log lines.
      if (state === 'issuing' || host.startsWith('*.')) return;
      new DeploymentDomainRepository(dataSource.manager)
        .setState(host, state, error ?? null)
        .catch((err) => log.warn({ err, host }, "edge: recording a domain's certificate state failed"));
    },
  });
  return { repo, keeper };
}
