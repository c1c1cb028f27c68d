import { Resolver } from 'node:dns/promises';
import type { DnsServer } from '@slipway/config';
import { DeploymentDomainRepository, type DataSource, type DeploymentDomain, type DomainState } from '@slipway/db';
import { PeriodicPass, type Logger } from '@slipway/logging';

/** The TXT record that proves a workspace controls a host (docs/api.md, Domains). */
export const verificationRecord = (host: string) => `_slipway-challenge.${host}`;

export interface DomainVerifierOptions {
  dataSource: DataSource;
  /** Resolvers to ask; empty: the system's. */
  dnsServers: readonly DnsServer[];
  /** How often a pending domain is looked at again. */
  everyMs: number;
  /** The state a domain enters once verified (`issuing` when the edge obtains certificates). */
  verifiedState: DomainState;
  log: Logger;
}

/**
 * Verifies custom domains: a domain pending verification is routed once the TXT record
 * `_slipway-challenge.<host>` holds its token. Each pending domain is looked at every `everyMs`
 * by whichever edge replica gets to it (marking it verified is conditional, so two replicas
 * agree); a miss is recorded as the domain's `error`, which the API shows.
 */
export class DomainVerifier {
  private readonly resolver = new Resolver({ timeout: 3_000, tries: 2 });
  private readonly passes = new PeriodicPass<void>({
    run: () => this.verifyDue(),
    onError: (err) => this.options.log.warn({ err }, 'edge: verifying domains failed (tried again at the next pass)'),
  });

  constructor(private readonly options: DomainVerifierOptions) {
    if (options.dnsServers.length)
      this.resolver.setServers(
        options.dnsServers.map((s) => (s.host.includes(':') ? `[${s.host}]:${s.port}` : `${s.host}:${s.port}`)),
      );
  }

  start(): void {
    this.passes.every(Math.min(this.options.everyMs, 5_000));
    void this.pass();
  }

  stop(): Promise<void> {
    return this.passes.stop();
  }

  /** One look at every domain due (never two passes at once: one asked for during a pass waits for it). */
  pass(): Promise<void> {
    return this.passes.trigger();
  }

  private async verifyDue(): Promise<void> {
    const repo = new DeploymentDomainRepository(this.options.dataSource.manager);
    for (const domain of await repo.pendingVerification(this.options.everyMs)) {
      const missing = await this.missingProof(domain);
      if (missing) {
        await repo.recordCheck(domain.id, missing);
        continue;
      }
      await repo.markVerified(domain.id, this.options.verifiedState);
      this.options.log.info({ host: domain.host, deploymentId: domain.deploymentId }, 'edge: domain verified');
    }
  }

  /** Null when the TXT record holds the token, else what was found instead. */
  private async missingProof(domain: DeploymentDomain): Promise<string | null> {
    const name = verificationRecord(domain.host);
    try {
      const records = await this.resolver.resolveTxt(name);
      if (records.some((chunks) => chunks.join('') === domain.verificationToken)) return null;
      return `The TXT record ${name} does not hold this domain's verification token yet.`;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      return `No TXT record ${name} was found yet (${code}).`;
    }
  }
}
