import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { rootCertificates } from 'node:tls';
import * as acme from 'acme-client';
import type { SecretsCodec } from '@slipway/crypto';
import type { EdgeCertificateRepository } from '@slipway/db';
import type { DnsHook } from './dns-hook.js';

/** A certificate fresh from the CA. */
export interface IssuedPair {
  /** The full chain the CA sent, leaf first. */
  certPem: string;
  /** Its private key (PKCS#8 PEM, ECDSA P-256). */
  keyPem: string;
  notBefore: Date;
  notAfter: Date;
}

export interface AcmeIssuerOptions {
  /** SLIPWAY_ACME_DIRECTORY_URL. */
  directoryUrl: string;
  /** SLIPWAY_ACME_EMAIL: the account's contact. */
  email?: string;
  /** SLIPWAY_ACME_CA_FILE: a root trusted (besides the public ones) for the directory's own HTTPS. */
  caFile?: string;
  codec: SecretsCodec;
  /** A repository on a pool (not in a transaction): challenges must be visible to every replica at once. */
  repo: EdgeCertificateRepository;
  /** How long to wait between looks at an order's or a challenge's status (ms): acme-client's backoff, 1 s to 10 s by default. */
  pollMinMs?: number;
  pollMaxMs?: number;
  /** SLIPWAY_ACME_DNS_HOOK: publishes DNS-01 records, which a wildcard (`*.<domain>`) needs. */
  dnsHook?: DnsHook;
}

/**
 * Obtains one certificate from an ACME (RFC 8555) CA through `acme-client`: the account (made once
 * per directory, its ECDSA key sealed in Postgres, the terms accepted), an order for the host,
 * the HTTP-01 challenge (its key authorization written to Postgres, where every edge replica's
 * `answerAcmeChallenge` finds it, before the CA is told to validate, and removed after) — or for a
 * wildcard (`*.<domain>`) the DNS-01 challenge, its TXT record published and removed by the
 * operator's DNS hook — then the CSR of a fresh ECDSA P-256 key and the chain. The protocol
 * itself is acme-client's.
 */
export class AcmeIssuer {
  private client: acme.Client | null = null;

  constructor(private readonly options: AcmeIssuerOptions) {
    if (options.caFile) trustForOrigin(options.directoryUrl, readCa(options.caFile));
  }

  get directoryUrl(): string {
    return this.options.directoryUrl;
  }

  /** A certificate for `host` (`*.<domain>`: a wildcard); throws with the CA's message when the CA refuses or validation fails. */
  async issue(host: string): Promise<IssuedPair> {
    const wildcard = host.startsWith('*.');
    const { repo, dnsHook } = this.options;
    if (wildcard && !dnsHook)
      throw new Error(`A wildcard certificate (${host}) needs DNS-01, and no DNS hook is set (SLIPWAY_ACME_DNS_HOOK)`);
    const client = await this.account();
    const [key, csr] = await acme.crypto.createCsr(
      { commonName: host, altNames: [host] },
      await acme.crypto.createPrivateEcdsaKey('P-256'),
    );
    const expected = wildcard ? 'dns-01' : 'http-01';
    /** DNS-01's record: `_acme-challenge.` and the identifier, the wildcard's base domain (RFC 8555 §8.4). */
    const recordName = (authz: { identifier: { value: string } }) => `_acme-challenge.${authz.identifier.value}`;
    const chain = await client.auto({
      csr,
      email: this.options.email,
      termsOfServiceAgreed: true,
      challengePriority: [expected],
      // The edge may not reach itself by its public name (NAT, split DNS): the CA's own validation is the check.
      skipChallengeVerification: true,
      challengeCreateFn: async (authz, challenge, keyAuthorization) => {
        if (challenge.type !== expected)
          throw new Error(`The CA offered ${challenge.type} for ${host}, and the edge answers ${expected} there`);
        if (challenge.type === 'dns-01') await dnsHook!.present(recordName(authz), keyAuthorization);
        else await repo.putChallenge(challenge.token, keyAuthorization, host);
      },
      challengeRemoveFn: async (authz, challenge, keyAuthorization) => {
        if (challenge.type === 'dns-01') await dnsHook!.cleanup(recordName(authz), keyAuthorization);
        else await repo.deleteChallenge(challenge.token);
      },
    });
    const certPem = chain.toString();
    const leaf = new X509Certificate(acme.crypto.splitPemChain(certPem)[0]!);
    return { certPem, keyPem: key.toString(), notBefore: new Date(leaf.validFrom), notAfter: new Date(leaf.validTo) };
  }

  /**
   * The directory's account: its key from Postgres (made and stored once; when two replicas make
   * one at once the first stored wins and both use it), registered with the CA (terms accepted)
   * the first time, its URL kept.
   */
  private async account(): Promise<acme.Client> {
    if (this.client) return this.client;
    const { repo, codec, directoryUrl } = this.options;
    let account = await repo.account(directoryUrl);
    if (!account) {
      const key = (await acme.crypto.createPrivateEcdsaKey('P-256')).toString();
      account = await repo.putAccountKey(directoryUrl, codec.seal(key, directoryUrl));
    }
    const client = new acme.Client({
      directoryUrl,
      accountKey: codec.open(account.keySealed, directoryUrl),
      accountUrl: account.accountUrl ?? undefined,
      backoffMin: this.options.pollMinMs ?? 1_000,
      backoffMax: this.options.pollMaxMs ?? 10_000,
      backoffAttempts: 12,
    });
    if (!account.accountUrl) {
      await client.createAccount({
        termsOfServiceAgreed: true,
        contact: this.options.email ? [`mailto:${this.options.email}`] : undefined,
      });
      await repo.putAccountUrl(directoryUrl, client.getAccountUrl());
    }
    this.client = client;
    return client;
  }
}

/** Agents that trust an extra root, by the origin (scheme, host, port) they are for. */
const trustedOrigins = new Map<string, Agent>();

/**
 * Trusts `caPem` (besides the public roots) for requests to `url`'s origin. acme-client sends every
 * request through one shared axios instance and takes no agent per client, so one request
 * interceptor on that instance gives requests to a registered origin its agent; requests to any
 * other origin are left as they are.
 */
function trustForOrigin(url: string, caPem: string): void {
  const { origin, protocol } = new URL(url);
  if (protocol !== 'https:') return;
  if (!trustedOrigins.size) {
    acme.axios.interceptors.request.use((config) => {
      if (config.url) {
        const agent = trustedOrigins.get(originOf(config.url));
        if (agent) config.httpsAgent = agent;
      }
      return config;
    });
  }
  trustedOrigins.set(origin, new Agent({ ca: [...rootCertificates, caPem], keepAlive: true }));
}

function readCa(file: string): string {
  try {
    const pem = readFileSync(file, 'utf8');
    new X509Certificate(pem);
    return pem;
  } catch (err) {
    throw new Error(`SLIPWAY_ACME_CA_FILE ${file} does not load as a PEM certificate: ${(err as Error).message}`);
  }
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '';
  }
}
