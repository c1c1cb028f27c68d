import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Certificates the edge obtains through ACME (docs/operations.md, The edge). Every edge replica
 * serves and renews from these rows, so they live in Postgres, not on a replica's disk:
 *
 * - `edge_certificates`: one row per host the edge wants a certificate for (lower case). The
 *   chain (leaf first) and its private key, sealed with the secrets key bound to the host, stay
 *   NULL until the first issuance; a failed issuance or renewal only writes `failures`,
 *   `next_attempt_at` (its backoff) and `last_error`, never the certificate in use.
 *   `renew_after` is two thirds into the certificate's lifetime. `leased_by`/`leased_until` are
 *   the issuance lease: a replica claims a due host with a short `FOR UPDATE SKIP LOCKED`
 *   statement that sets them, then talks to the CA outside any transaction (an order takes
 *   seconds to minutes: no connection is held for it); another replica skips a leased host until
 *   the lease ends, so two replicas never order for one host at once, and a replica that died
 *   mid-order loses the host when its lease runs out.
 * - `edge_acme_accounts`: the ACME account of each directory (its key sealed, bound to the
 *   directory URL): made once, by whichever replica gets there first.
 * - `edge_acme_challenges`: pending HTTP-01 answers. The CA may ask any replica behind the load
 *   balancer, so the replica placing the order writes the key authorization here and every
 *   replica answers from it; rows past `expires_at` are never answered and are swept.
 */
export class EdgeCertificates1765000000200 implements MigrationInterface {
  name = 'EdgeCertificates1765000000200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE edge_certificates (
        host text PRIMARY KEY CHECK (host = lower(host) AND host <> ''),
        cert_pem text,
        key_sealed text,
        not_after timestamptz,
        renew_after timestamptz,
        failures integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        last_error text,
        leased_by text,
        leased_until timestamptz,
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((cert_pem IS NULL) = (key_sealed IS NULL))
      )`);
    await q.query(`CREATE INDEX edge_certificates_next_attempt_idx ON edge_certificates (next_attempt_at)`);
    await q.query(`
      CREATE TABLE edge_acme_accounts (
        directory_url text PRIMARY KEY,
        key_sealed text NOT NULL,
        account_url text,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE edge_acme_challenges (
        token text PRIMARY KEY,
        key_authorization text NOT NULL,
        host text NOT NULL,
        expires_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX edge_acme_challenges_expires_idx ON edge_acme_challenges (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE edge_acme_challenges`);
    await q.query(`DROP TABLE edge_acme_accounts`);
    await q.query(`DROP TABLE edge_certificates`);
  }
}
