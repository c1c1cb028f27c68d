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

/**
 * The edge's ACME certificates (docs/operations.md, The edge): one for each verified custom
 * domain, and one per deployment name under the apps domain unless the operator's (wildcard)
 * certificate covers them; never for `localhost` names. A custom domain's certificate state is
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
  });
  const names = !config.edge.tlsCertFile;
  const keeper = new CertificateKeeper({
    wanted: async () => [
      ...routes.customHosts,
      ...(names
        ? (await new EdgeRouteRepository(dataSource.manager).all()).map(
            (r) => `${r.edgeName}.${config.edge.appsDomain}`,
          )
        : []),
    ],
    issuer,
    repo,
    codec,
    log,
    onState: (host, state, error) => {
      // A verified domain is `issuing` already; a renewal of an active one keeps it `active`.
      if (state === 'issuing') return;
      new DeploymentDomainRepository(dataSource.manager)
        .setState(host, state, error ?? null)
        .catch((err) => log.warn({ err, host }, "edge: recording a domain's certificate state failed"));
    },
  });
  return { repo, keeper };
}
