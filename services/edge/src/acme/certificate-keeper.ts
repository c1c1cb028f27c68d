import { createHash, randomBytes, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { createSecureContext, type SecureContext } from 'node:tls';
import type { SecretsCodec } from '@slipway/crypto';
import type { DueCertificate, EdgeCertificateRepository } from '@slipway/db';
import { PeriodicPass, type Logger } from '@slipway/logging';
import type { IssuedPair } from './acme-issuer.js';

export type CertificateState = 'issuing' | 'active' | 'failed';

/** What the keeper needs of an issuer (AcmeIssuer). */
export interface CertificateIssuer {
  issue(host: string): Promise<IssuedPair>;
}

export interface CertificateKeeperOptions {
  /** The hosts that should have a certificate (the deployments' hosts). */
  wanted: () => Promise<string[]>;
  issuer: CertificateIssuer;
  /** A repository on the pool (not a transaction). */
  repo: EdgeCertificateRepository;
  codec: SecretsCodec;
  log: Logger;
  onState?: (host: string, state: CertificateState, error?: string) => void;
  /** How often to look for due hosts (ms); 60 s by default. */
  intervalMs?: number;
  /** Hosts issued for at once by this keeper; 2 by default. */
  concurrency?: number;
  /** How long a claimed host stays this keeper's (ms) before another replica may take it over; 10 min by default. */
  leaseMs?: number;
  /** The first delay after a failure (ms), doubled on each further failure up to `maxBackoffMs`: 1 min to 6 h by default. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** This replica's name in leases (random by default). */
  holder?: string;
}

/** How long a host with no certificate stays known as such before the database is asked again. */
const MISSING_CACHE_MS = 5_000;

interface Cached {
  /** md5 of the stored chain and sealed key, as `EdgeCertificateRepository.stamps()` computes it. */
  stamp: string;
  context: SecureContext;
  /** The leaf's serial number (hex). */
  serial: string;
}

/**
 * Whether a certificate may be asked for `host`: a DNS name, or a wildcard of one (`*.<domain>`,
 * under at least two labels); never `localhost`, `*.localhost` or an IP address.
 */
export function isIssuableHost(host: string): boolean {
  let h = host.toLowerCase().replace(/\.$/, '');
  if (h.startsWith('*.')) {
    h = h.slice(2);
    if (!h.includes('.')) return false;
  }
  if (!h || isIP(h.replace(/^\[|\]$/g, '')) !== 0) return false;
  if (h === 'localhost' || h.endsWith('.localhost')) return false;
  return /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(h);
}

/**
 * Keeps a certificate for every wanted host (docs/operations.md, The edge): every `intervalMs`
 * (and on `poke()`) it records the wanted hosts, claims those whose certificate is missing or
 * two thirds through its life (a lease in Postgres: see EdgeCertificateRepository, so two edge
 * replicas never order for one host at once), and has the issuer get one. A failure is recorded
 * with the CA's message and an exponential backoff (1 min doubling to 6 h) in `next_attempt_at`;
 * it never touches the certificate in use, which keeps being served. `secureContextFor(host)`
 * serves an SNICallback from a cache of contexts built from the stored rows, rebuilt when a row's
 * certificate changes (this replica's renewal at once, another replica's at the next tick).
 */
export class CertificateKeeper {
  private readonly holder: string;
  private readonly contexts = new Map<string, Cached>();
  private readonly missing = new Map<string, number>();
  private readonly passes = new PeriodicPass<void>({
    run: () => this.pass(),
    onError: (err) => this.options.log.warn({ err }, 'edge: a certificate pass failed (tries again at the next)'),
    rerun: true,
  });

  constructor(private readonly options: CertificateKeeperOptions) {
    this.holder = options.holder ?? `edge-${randomBytes(6).toString('hex')}`;
  }

  /** Runs a first pass now, then every `intervalMs`. */
  start(): void {
    if (this.passes.ticking || this.stopped) return;
    void this.poke();
    this.passes.every(this.options.intervalMs ?? 60_000);
  }

  /** Runs a pass soon (a new host, a test); passes never overlap: one asked for during a pass runs after it. */
  poke(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return this.passes.trigger();
  }

  /** Stops the timer and waits for the pass under way. */
  stop(): Promise<void> {
    return this.passes.stop();
  }

  private get stopped(): boolean {
    return this.passes.stopped;
  }

  /**
   * Renews `host` now, whatever its renewal point (tests, an operator): 'busy' when another
   * keeper holds its lease; the certificate in use stays until the new one is stored.
   */
  async forceRenew(host: string): Promise<CertificateState | 'busy'> {
    const h = host.toLowerCase();
    if (!isIssuableHost(h))
      throw new Error(
        `A certificate is never asked for ${host} (localhost, *.localhost and IP addresses are not issuable)`,
      );
    const claimed = await this.options.repo.claim(h, this.holder, this.leaseMs);
    if (!claimed) return 'busy';
    return this.issueFor(claimed);
  }

  /**
   * The TLS context of `host`'s stored certificate, or of the wildcard one label up
   * (`*.<domain>`), or null when it has neither (the caller falls back to its default). Cached;
   * rebuilt when the stored certificate changes.
   */
  async secureContextFor(host: string): Promise<SecureContext | null> {
    const h = host.toLowerCase().replace(/\.$/, '');
    if (h.startsWith('*.')) return null;
    // The host's own certificate first (a custom domain's), then a wildcard one label up (the apps domain's).
    const dot = h.indexOf('.');
    return (await this.storedContext(h)) ?? (dot > 0 ? this.storedContext(`*${h.slice(dot)}`) : null);
  }

  private async storedContext(h: string): Promise<SecureContext | null> {
    const cached = this.contexts.get(h);
    if (cached) return cached.context;
    if (!isIssuableHost(h)) return null;
    const missingAt = this.missing.get(h);
    if (missingAt !== undefined && Date.now() - missingAt < MISSING_CACHE_MS) return null;
    const stored = await this.load(h);
    if (!stored) {
      if (this.missing.size > 10_000) this.missing.clear();
      this.missing.set(h, Date.now());
    }
    return stored;
  }

  /**
   * An SNICallback for a TLS server: the host's certificate, else the server's default. With
   * `served`, a name it says the edge does not serve gets the default at once: a ClientHello costs
   * nothing to send, and each new name would otherwise be a read of Postgres.
   */
  sniCallback(
    served?: (servername: string) => boolean,
  ): (servername: string, cb: (err: Error | null, ctx?: SecureContext) => void) => void {
    return (servername, cb) => {
      if (served && !served(servername.toLowerCase().replace(/\.$/, ''))) return cb(null, undefined);
      this.secureContextFor(servername).then(
        (ctx) => cb(null, ctx ?? undefined),
        (err) => {
          this.options.log.warn({ err, servername }, 'edge: reading a certificate failed (served the default)');
          cb(null, undefined);
        },
      );
    };
  }

  private get leaseMs(): number {
    return this.options.leaseMs ?? 10 * 60_000;
  }

  private async pass(): Promise<void> {
    const { repo } = this.options;
    try {
      const hosts = [...new Set((await this.options.wanted()).map((h) => h.toLowerCase().replace(/\.$/, '')))].filter(
        isIssuableHost,
      );
      await repo.ensureWanted(hosts);
      const concurrency = Math.max(1, this.options.concurrency ?? 2);
      // Each host once per pass: one whose outcome could not be recorded is not ordered again at once.
      const tried = new Set<string>();
      while (!this.stopped) {
        const due = await repo.due(
          concurrency,
          this.holder,
          hosts.filter((h) => !tried.has(h)),
          this.leaseMs,
        );
        if (!due.length) break;
        for (const d of due) tried.add(d.host);
        await Promise.all(due.map((d) => this.issueFor(d)));
      }
    } finally {
      // Another replica's renewals are taken even when this pass could not look for due hosts.
      await this.refresh();
    }
  }

  /** One claimed host: issue, store (or record the failure), end the lease. */
  private async issueFor(due: DueCertificate): Promise<CertificateState> {
    const { repo, codec, log } = this.options;
    const host = due.host;
    this.options.onState?.(host, 'issuing');
    let issued: IssuedPair;
    try {
      issued = await this.options.issuer.issue(host);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const next = this.nextAttempt(due.failures);
      log.warn(
        { host, err: message, failures: due.failures + 1, nextAttemptAt: next, keptCertificate: due.hasCertificate },
        'edge: obtaining a certificate failed',
      );
      // Should this fail too, the lease keeps the host from being ordered again until it runs out.
      await repo
        .recordFailure(host, message, next, this.holder)
        .catch((e) => log.error({ err: e, host }, 'edge: recording a certificate failure failed'));
      this.options.onState?.(host, 'failed', message);
      return 'failed';
    }
    try {
      const lifetime = issued.notAfter.getTime() - issued.notBefore.getTime();
      const renewAfter = new Date(issued.notBefore.getTime() + (lifetime * 2) / 3);
      const keySealed = codec.seal(issued.keyPem, host);
      await repo.saveIssued(
        host,
        { certPem: issued.certPem, keySealed, notAfter: issued.notAfter, renewAfter },
        this.holder,
      );
      this.install(host, issued.certPem, issued.keyPem, keySealed);
      log.info({ host, notAfter: issued.notAfter, renewAfter }, 'edge: obtained a certificate');
      this.options.onState?.(host, 'active');
      return 'active';
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      log.error({ err, host }, 'edge: storing an obtained certificate failed');
      await repo
        .recordFailure(host, `storing the certificate failed: ${message}`, this.nextAttempt(due.failures), this.holder)
        .catch(() => {});
      this.options.onState?.(host, 'failed', message);
      return 'failed';
    }
  }

  /** When to try again after the failure that follows `failures` earlier ones: 1 min, doubled each time, at most 6 h. */
  private nextAttempt(failures: number): Date {
    const delay = Math.min(
      this.options.maxBackoffMs ?? 6 * 3_600_000,
      (this.options.minBackoffMs ?? 60_000) * 2 ** Math.min(failures, 30),
    );
    return new Date(Date.now() + delay);
  }

  /** Rebuilds the contexts whose stored certificate changed (another replica's renewal) and drops the forgotten. */
  private async refresh(): Promise<void> {
    const stamps = await this.options.repo.stamps();
    for (const host of [...this.contexts.keys()]) if (!stamps.has(host)) this.contexts.delete(host);
    for (const [host, stamp] of stamps) {
      const cached = this.contexts.get(host);
      if (cached && cached.stamp !== stamp)
        await this.load(host).catch((err) =>
          this.options.log.warn({ err, host }, 'edge: reloading a certificate failed (kept the one in use)'),
        );
    }
  }

  private async load(host: string): Promise<SecureContext | null> {
    const stored = await this.options.repo.stored(host);
    if (!stored) return null;
    const keyPem = this.options.codec.open(stored.keySealed, host);
    return this.install(host, stored.certPem, keyPem, stored.keySealed);
  }

  private install(host: string, certPem: string, keyPem: string, keySealed: string): SecureContext {
    const context = createSecureContext({ cert: certPem, key: keyPem });
    const serial = new X509Certificate(certPem).serialNumber;
    this.contexts.set(host, {
      stamp: createHash('md5')
        .update(certPem + keySealed)
        .digest('hex'),
      context,
      serial,
    });
    this.missing.delete(host);
    return context;
  }

  /** The serial number (hex) of the leaf `host`'s cached context serves, or null (tests, status). */
  servedSerial(host: string): string | null {
    return this.contexts.get(host.toLowerCase())?.serial ?? null;
  }
}
