import { isSelfHosted, type DeploymentSource } from '@slipway/domain';
import type { Config } from './index.js';

/** What a deployment's URL is made of. */
export interface ServedDeployment {
  source: DeploymentSource;
  servingPort: number | null;
  edgeName: string | null;
}

/**
 * Where a cloud-hosted deployment answers (docs/api.md, Deployments; docs/operations.md, The
 * edge): `<edge name>.<apps domain>` at the edge, https when the edge has a certificate for the
 * apps domain, with the port unless it is the scheme's own (or `SLIPWAY_APPS_PUBLIC_PORT` behind
 * an outer proxy). With the edge turned off (`SLIPWAY_EDGE_HTTP_PORT=off`): the deployment's
 * serving port on the runtime's public host. Self-hosted deployments (listeners) have none here.
 */
export class ServingUrls {
  private readonly origin: ((label: string) => string) | null;

  constructor(private readonly config: Pick<Config, 'edge' | 'runtime'>) {
    const { edge } = config;
    if (edge.httpPort === null) {
      this.origin = null;
      return;
    }
    // HTTPS once the edge has a certificate for the names: the operator's, or ACME's (never for localhost).
    const tls =
      edge.httpsPort !== null &&
      (edge.tlsCertFile !== undefined ||
        (edge.acmeDirectoryUrl !== undefined &&
          edge.appsDomain !== 'localhost' &&
          !edge.appsDomain.endsWith('.localhost')));
    const scheme = tls ? 'https' : 'http';
    const port = edge.publicPort ?? (tls ? edge.httpsPort! : edge.httpPort);
    const suffix = `.${edge.appsDomain}${port === (tls ? 443 : 80) ? '' : `:${port}`}`;
    this.origin = (label) => `${scheme}://${label}${suffix}`;
  }

  of(d: ServedDeployment): string | null {
    if (isSelfHosted(d.source)) return null;
    if (this.origin) return d.edgeName ? this.origin(d.edgeName) : null;
    const host = this.config.runtime.publicHost;
    return d.servingPort ? `http://${host.includes(':') ? `[${host}]` : host}:${d.servingPort}` : null;
  }
}
