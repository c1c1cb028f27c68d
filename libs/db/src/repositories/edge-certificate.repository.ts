import type { EntityManager } from 'typeorm';
import { queryRows } from '../sql.js';

/** A host whose certificate is due (missing, or past its renewal point), claimed for one issuance. */
export interface DueCertificate {
  host: string;
  /** Failed attempts since the last success (the backoff grows with it). */
  failures: number;
  /** Whether a certificate is stored (then this is a renewal, and that one keeps serving). */
  hasCertificate: boolean;
}

/** A host's stored certificate: the chain (leaf first) and its sealed key. */
export interface StoredCertificate {
  host: string;
  certPem: string;
  /** The private key (PEM) sealed with the secrets key, context = the host. */
  keySealed: string;
  notAfter: Date;
  renewAfter: Date;
  updatedAt: Date;
}

/** What an operator watches of a host's certificate (the edge's metrics). */
export interface CertificateSummary {
  host: string;
  /** When its stored certificate expires; null before the first was obtained. */
  notAfter: Date | null;
  /** Failed attempts since its last success. */
  failures: number;
}

/** A host's issuance record, certificate or not (for status and tests). */
export interface CertificateRecord {
  host: string;
  hasCertificate: boolean;
  notAfter: Date | null;
  renewAfter: Date | null;
  failures: number;
  nextAttemptAt: Date;
  lastError: string | null;
  leasedBy: string | null;
  leasedUntil: Date | null;
}

export interface IssuedCertificate {
  certPem: string;
  keySealed: string;
  notAfter: Date;
  renewAfter: Date;
}

export interface AcmeAccount {
  directoryUrl: string;
  /** The account's private key (PEM), sealed with the secrets key, context = the directory URL. */
  keySealed: string;
  /** Null until the account is registered with the CA. */
  accountUrl: string | null;
}

interface RecordRow {
  host: string;
  has_certificate: boolean;
  not_after: Date | null;
  renew_after: Date | null;
  failures: number;
  next_attempt_at: Date;
  last_error: string | null;
  leased_by: string | null;
  leased_until: Date | null;
}

/** How long a pending HTTP-01 answer is kept at most. */
const CHALLENGE_TTL_MS = 15 * 60_000;

/**
 * The edge's ACME state (migration 1765000000200-edge-certificates; docs/operations.md, The edge):
 * the certificates it serves, the hosts it wants them for, the ACME account of each directory,
 * and the pending HTTP-01 answers every replica serves.
 *
 * Locking: a replica claims due hosts with a lease, not a held transaction. `due()` and `claim()`
 * are each one statement that picks unleased rows `FOR UPDATE SKIP LOCKED` (a concurrent claim
 * skips them instead of waiting) and stamps `leased_by`/`leased_until` on them; the ACME order then
 * runs outside any transaction, and `saveIssued`/`recordFailure` end the lease. Another replica
 * never claims a leased host until its lease has run out (a replica that died mid-order), so two
 * replicas never order for one host at once, and no pool connection is held for an order.
 */
export class EdgeCertificateRepository {
  constructor(private readonly manager: EntityManager) {}

  /** Adds the hosts that have no row yet (due at once); never touches existing rows. */
  async ensureWanted(hosts: readonly string[]): Promise<void> {
    const list = [...new Set(hosts.map((h) => h.toLowerCase()))];
    if (!list.length) return;
    await queryRows(
      this.manager,
      `INSERT INTO edge_certificates (host) SELECT unnest($1::text[]) ON CONFLICT (host) DO NOTHING`,
      [list],
    );
  }

  /**
   * Claims up to `limit` of `hosts` whose certificate is missing or past `renew_after`, whose
   * `next_attempt_at` has come and that nobody holds a lease on: leased to `holder` for `leaseMs`.
   * Oldest attempt first.
   */
  async due(limit: number, holder: string, hosts: readonly string[], leaseMs: number): Promise<DueCertificate[]> {
    if (!hosts.length || limit <= 0) return [];
    const rows = await queryRows<{ host: string; failures: number; has_certificate: boolean }>(
      this.manager,
      `UPDATE edge_certificates c SET leased_by = $2, leased_until = now() + $3::double precision * interval '1 millisecond'
         FROM (SELECT host FROM edge_certificates
                WHERE host = ANY($4::text[])
                  AND (cert_pem IS NULL OR renew_after <= now())
                  AND next_attempt_at <= now()
                  AND (leased_until IS NULL OR leased_until < now())
                ORDER BY next_attempt_at, host
                LIMIT $1
                FOR UPDATE SKIP LOCKED) d
        WHERE c.host = d.host
        RETURNING c.host, c.failures, c.cert_pem IS NOT NULL AS has_certificate`,
      [limit, holder, leaseMs, hosts.map((h) => h.toLowerCase())],
    );
    return rows.map((r) => ({ host: r.host, failures: r.failures, hasCertificate: r.has_certificate }));
  }

  /**
   * Claims one host whatever its renewal point (a forced renewal), creating its row if needed;
   * null when another holder's lease is running.
   */
  async claim(host: string, holder: string, leaseMs: number): Promise<DueCertificate | null> {
    await this.ensureWanted([host]);
    const [row] = await queryRows<{ host: string; failures: number; has_certificate: boolean }>(
      this.manager,
      `UPDATE edge_certificates c SET leased_by = $2, leased_until = now() + $3::double precision * interval '1 millisecond'
         FROM (SELECT host FROM edge_certificates
                WHERE host = $1 AND (leased_until IS NULL OR leased_until < now())
                FOR UPDATE SKIP LOCKED) d
        WHERE c.host = d.host
        RETURNING c.host, c.failures, c.cert_pem IS NOT NULL AS has_certificate`,
      [host.toLowerCase(), holder, leaseMs],
    );
    return row ? { host: row.host, failures: row.failures, hasCertificate: row.has_certificate } : null;
  }

  /** A host's certificate and sealed key, or null while it has none. */
  async stored(host: string): Promise<StoredCertificate | null> {
    const [row] = await queryRows<{
      host: string;
      cert_pem: string;
      key_sealed: string;
      not_after: Date;
      renew_after: Date;
      updated_at: Date;
    }>(
      this.manager,
      `SELECT host, cert_pem, key_sealed, not_after, renew_after, updated_at FROM edge_certificates ` +
        `WHERE host = $1 AND cert_pem IS NOT NULL`,
      [host.toLowerCase()],
    );
    return row
      ? {
          host: row.host,
          certPem: row.cert_pem,
          keySealed: row.key_sealed,
          notAfter: row.not_after,
          renewAfter: row.renew_after,
          updatedAt: row.updated_at,
        }
      : null;
  }

  /** A fingerprint of every stored certificate, by host: what changed since the last look. */
  async stamps(): Promise<Map<string, string>> {
    const rows = await queryRows<{ host: string; stamp: string }>(
      this.manager,
      `SELECT host, md5(cert_pem || key_sealed) AS stamp FROM edge_certificates WHERE cert_pem IS NOT NULL`,
    );
    return new Map(rows.map((r) => [r.host, r.stamp]));
  }

  /** Every wanted host's expiry and failures (the edge's `/metrics`). */
  async summaries(): Promise<CertificateSummary[]> {
    const rows = await queryRows<{ host: string; not_after: Date | null; failures: number }>(
      this.manager,
      `SELECT host, not_after, failures FROM edge_certificates ORDER BY host`,
    );
    return rows.map((r) => ({ host: r.host, notAfter: r.not_after, failures: r.failures }));
  }

  /** A host's issuance record (its certificate's dates, failures, backoff, lease), or null. */
  async record(host: string): Promise<CertificateRecord | null> {
    const [row] = await queryRows<RecordRow>(
      this.manager,
      `SELECT host, cert_pem IS NOT NULL AS has_certificate, not_after, renew_after, failures, next_attempt_at, ` +
        `last_error, leased_by, leased_until
         FROM edge_certificates WHERE host = $1`,
      [host.toLowerCase()],
    );
    return row
      ? {
          host: row.host,
          hasCertificate: row.has_certificate,
          notAfter: row.not_after,
          renewAfter: row.renew_after,
          failures: row.failures,
          nextAttemptAt: row.next_attempt_at,
          lastError: row.last_error,
          leasedBy: row.leased_by,
          leasedUntil: row.leased_until,
        }
      : null;
  }

  /** Stores a new certificate, clears the failures and ends `holder`'s lease. */
  async saveIssued(host: string, issued: IssuedCertificate, holder: string): Promise<void> {
    await queryRows(
      this.manager,
      `INSERT INTO edge_certificates AS c (host, cert_pem, key_sealed, not_after, renew_after)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (host) DO UPDATE SET cert_pem = $2, key_sealed = $3, not_after = $4, renew_after = $5,
         failures = 0, next_attempt_at = now(), last_error = NULL, updated_at = now(),
         leased_by = CASE WHEN c.leased_by = $6 THEN NULL ELSE c.leased_by END,
         leased_until = CASE WHEN c.leased_by = $6 THEN NULL ELSE c.leased_until END`,
      [host.toLowerCase(), issued.certPem, issued.keySealed, issued.notAfter, issued.renewAfter, holder],
    );
  }

  /**
   * A failed issuance: one more failure, the next attempt not before `nextAttemptAt`, the CA's
   * message kept; `holder`'s lease ends. The stored certificate, if any, is left as it is.
   */
  async recordFailure(host: string, error: string, nextAttemptAt: Date, holder: string): Promise<void> {
    await queryRows(
      this.manager,
      `UPDATE edge_certificates SET failures = failures + 1, next_attempt_at = $3, last_error = left($2, 2000), updated_at = now(),
         leased_by = CASE WHEN leased_by = $4 THEN NULL ELSE leased_by END,
         leased_until = CASE WHEN leased_by = $4 THEN NULL ELSE leased_until END
        WHERE host = $1`,
      [host.toLowerCase(), error, nextAttemptAt, holder],
    );
  }

  /** Ends `holder`'s lease on a host without recording anything (an issuance that did not start). */
  async release(host: string, holder: string): Promise<void> {
    await queryRows(
      this.manager,
      `UPDATE edge_certificates SET leased_by = NULL, leased_until = NULL WHERE host = $1 AND leased_by = $2`,
      [host.toLowerCase(), holder],
    );
  }

  /** Drops a host: its certificate, key and record (the host is no longer served). */
  async forget(host: string): Promise<void> {
    await queryRows(this.manager, `DELETE FROM edge_certificates WHERE host = $1`, [host.toLowerCase()]);
  }

  /** Stores a pending HTTP-01 answer (and sweeps expired ones). */
  async putChallenge(token: string, keyAuthorization: string, host: string, ttlMs = CHALLENGE_TTL_MS): Promise<void> {
    await queryRows(this.manager, `DELETE FROM edge_acme_challenges WHERE expires_at < now()`);
    await queryRows(
      this.manager,
      `INSERT INTO edge_acme_challenges (token, key_authorization, host, expires_at) VALUES ($1, $2, $3, ` +
        `now() + $4::double precision * interval '1 millisecond')
       ON CONFLICT (token) DO UPDATE SET key_authorization = $2, host = $3, ` +
        `expires_at = now() + $4::double precision * interval '1 millisecond'`,
      [token, keyAuthorization, host.toLowerCase(), ttlMs],
    );
  }

  /** The key authorization of a pending token, or null (unknown or expired). */
  async challenge(token: string): Promise<string | null> {
    const [row] = await queryRows<{ key_authorization: string }>(
      this.manager,
      `SELECT key_authorization FROM edge_acme_challenges WHERE token = $1 AND expires_at > now()`,
      [token],
    );
    return row?.key_authorization ?? null;
  }

  async deleteChallenge(token: string): Promise<void> {
    await queryRows(this.manager, `DELETE FROM edge_acme_challenges WHERE token = $1`, [token]);
  }

  /** The account of a directory, or null. */
  async account(directoryUrl: string): Promise<AcmeAccount | null> {
    const [row] = await queryRows<{ directory_url: string; key_sealed: string; account_url: string | null }>(
      this.manager,
      `SELECT directory_url, key_sealed, account_url FROM edge_acme_accounts WHERE directory_url = $1`,
      [directoryUrl],
    );
    return row ? { directoryUrl: row.directory_url, keySealed: row.key_sealed, accountUrl: row.account_url } : null;
  }

  /**
   * Stores a directory's account key unless one is stored already, and returns the account
   * that is stored: two replicas creating one at once both end up with the first one's key.
   */
  async putAccountKey(directoryUrl: string, keySealed: string): Promise<AcmeAccount> {
    await queryRows(
      this.manager,
      `INSERT INTO edge_acme_accounts (directory_url, key_sealed) VALUES ($1, $2) ON CONFLICT (directory_url) DO NOTHING`,
      [directoryUrl, keySealed],
    );
    return (await this.account(directoryUrl))!;
  }

  /** Records the account URL the CA gave the directory's account. */
  async putAccountUrl(directoryUrl: string, accountUrl: string): Promise<void> {
    await queryRows(this.manager, `UPDATE edge_acme_accounts SET account_url = $2 WHERE directory_url = $1`, [
      directoryUrl,
      accountUrl,
    ]);
  }
}
