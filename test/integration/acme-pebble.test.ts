/**
 * The edge's automatic certificates (docs/operations.md, The edge) against pebble, the ACME test
 * server, standing in for a public CA (Let's Encrypt): a real ACME exchange through acme-client,
 * HTTP-01 answered from Postgres by a plain HTTP server on a free port (pebble's DNS stub,
 * pebble-challtestsrv, resolves every name to 127.0.0.1), DNS-01 published by an operator's DNS
 * hook (a script calling the stub's management API, as a real one calls its provider's),
 * certificates and leases in a real, migrated database. Nothing of our own is mocked.
 */
import { randomBytes, X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretsCodec, type SecretsCodec } from '@slipway/crypto';
import { createDataSource, EdgeCertificateRepository, type DataSource } from '@slipway/db';
import { createLogger } from '@slipway/logging';
import { AcmeIssuer } from '../../services/edge/src/acme/acme-issuer.js';
import { answerAcmeChallenge } from '../../services/edge/src/acme/challenge-responder.js';
import { DnsHook } from '../../services/edge/src/acme/dns-hook.js';
import {
  CertificateKeeper,
  isIssuableHost,
  type CertificateIssuer,
  type CertificateState,
} from '../../services/edge/src/acme/certificate-keeper.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startPebble, writeDnsHook, type Pebble } from '../support/pebble.js';

const HOST = 'agent.example.test';
const log = createLogger({ name: 'edge-acme-test', level: 'silent' });

let pebble: Pebble;
let responder: Server;
let database: TestDatabase;
let dataSource: DataSource;
let repo: EdgeCertificateRepository;
let codec: SecretsCodec;
let rootPem: string;
/** The TLS listener that serves with the keeper's SNICallback, as the edge's HTTPS port would. */
let tlsServer: TlsServer;

/** Counts issuances per host, and how many ran at once at most, across every issuer it wraps (every keeper). */
class IssuanceTally {
  readonly started = new Map<string, number>();
  readonly maxInFlight = new Map<string, number>();
  private readonly inFlight = new Map<string, number>();

  /** Slow issuances (`delayMs` before each) let two keepers' passes overlap for certain. */
  delayMs = 0;

  wrap(inner: CertificateIssuer): CertificateIssuer {
    return {
      issue: async (host) => {
        this.started.set(host, (this.started.get(host) ?? 0) + 1);
        const now = (this.inFlight.get(host) ?? 0) + 1;
        this.inFlight.set(host, now);
        this.maxInFlight.set(host, Math.max(now, this.maxInFlight.get(host) ?? 0));
        try {
          if (this.delayMs) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
          return await inner.issue(host);
        } finally {
          this.inFlight.set(host, (this.inFlight.get(host) ?? 1) - 1);
        }
      },
    };
  }
}

let wanted: string[] = [];
const states: Array<{ host: string; state: CertificateState; error?: string; holder: string }> = [];
const counting = new IssuanceTally();
let keeper: CertificateKeeper;

function newIssuer(): AcmeIssuer {
  return new AcmeIssuer({
    directoryUrl: pebble.directoryUrl,
    caFile: pebble.caFile,
    email: 'ops@example.test',
    codec,
    repo,
    pollMinMs: 100,
    pollMaxMs: 1_000,
  });
}

function newKeeper(issuer: CertificateIssuer, holder: string): CertificateKeeper {
  return new CertificateKeeper({
    wanted: async () => wanted,
    issuer,
    repo,
    codec,
    log,
    holder,
    intervalMs: 3_600_000,
    onState: (host, state, error) => states.push({ host, state, error, holder }),
  });
}

/** The chain a TLS client gets for `servername` from the SNICallback-served listener, leaf first. */
function servedChain(servername: string): Promise<X509Certificate[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(
      { host: '127.0.0.1', port: (tlsServer.address() as AddressInfo).port, servername, ca: rootPem },
      () => {
        // The peer's certificate, then the ones it sent after it, as the client linked them.
        const chain: X509Certificate[] = [];
        for (let cert = socket.getPeerX509Certificate(); cert && chain.length < 5; cert = cert.issuerCertificate) {
          if (chain.some((c) => c.fingerprint256 === cert!.fingerprint256)) break;
          chain.push(cert);
        }
        socket.end();
        resolve(chain);
      },
    );
    socket.once('error', reject);
  });
}

beforeAll(async () => {
  responder = createServer((req, res) => {
    void answerAcmeChallenge(req, res, repo).then((handled) => {
      if (!handled) res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => responder.listen(0, '127.0.0.1', resolve));
  pebble = await startPebble({ httpPort: (responder.address() as AddressInfo).port });
  rootPem = await pebble.rootPem();
  database = await createTestDatabase();
  dataSource = createDataSource({ url: database.url, applicationName: 'slipway-test-acme', poolSize: 6 });
  await dataSource.initialize();
  repo = new EdgeCertificateRepository(dataSource.manager);
  codec = secretsCodec({ secretsKey: { key: randomBytes(32) }, previousSecretsKeys: [] });
  keeper = newKeeper(counting.wrap(newIssuer()), 'edge-a');
  tlsServer = createTlsServer({ SNICallback: keeper.sniCallback() }, (socket) => socket.end());
  await new Promise<void>((resolve) => tlsServer.listen(0, '127.0.0.1', resolve));
}, 60_000);

afterAll(async () => {
  await keeper?.stop();
  await new Promise<void>((resolve) => (tlsServer ? tlsServer.close(() => resolve()) : resolve()));
  await new Promise<void>((resolve) => (responder ? responder.close(() => resolve()) : resolve()));
  await pebble?.stop();
  await dataSource?.destroy();
  await database?.drop();
});

/** HOST's certificate, issued now unless an earlier test of this file issued it already, and served: each test can run alone. */
async function issued(): Promise<string> {
  if (!wanted.includes(HOST)) wanted = [...wanted, HOST];
  if (!(await repo.stored(HOST))) await keeper.poke();
  const [leaf] = await servedChain(HOST);
  return leaf!.serialNumber;
}

describe('ACME certificates against pebble', () => {
  it(
    'issues a certificate whose served chain (leaf + intermediate) verifies against pebble’s root; ' +
      'never for localhost or an address',
    async () => {
      wanted = [HOST, 'localhost', 'app.localhost', '127.0.0.1'];
      await keeper.poke();
      expect(states.filter((s) => s.host === HOST).map((s) => s.state)).toEqual(['issuing', 'active']);

      const stored = await repo.stored(HOST);
      expect(stored).not.toBeNull();
      const [leaf, intermediate] = stored!.certPem
        .match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!
        .map((p) => new X509Certificate(p));
      const root = new X509Certificate(rootPem);
      expect(leaf!.checkHost(HOST)).toBe(HOST);
      expect(leaf!.checkIssued(intermediate!)).toBe(true);
      expect(leaf!.verify(intermediate!.publicKey)).toBe(true);
      expect(intermediate!.checkIssued(root)).toBe(true);
      expect(intermediate!.verify(root.publicKey)).toBe(true);
      expect(leaf!.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
      // Renewal at two thirds of the lifetime; the key is sealed, bound to the host.
      const lifetime = stored!.notAfter.getTime() - new Date(leaf!.validFrom).getTime();
      expect(
        Math.abs(stored!.renewAfter.getTime() - (new Date(leaf!.validFrom).getTime() + (lifetime * 2) / 3)),
      ).toBeLessThan(2_000);
      expect(stored!.keySealed).not.toContain('PRIVATE KEY');
      expect(() => codec.open(stored!.keySealed, 'other.example.test')).toThrow();

      // What a TLS client gets through the SNICallback: the leaf and the intermediate, trusted through pebble's root.
      const chain = await servedChain(HOST);
      expect(chain.length).toBeGreaterThanOrEqual(2);
      expect(chain[0]!.serialNumber).toBe(leaf!.serialNumber);
      expect(chain[1]!.fingerprint256).toBe(intermediate!.fingerprint256);

      // (e) localhost, *.localhost and addresses are never asked for, nor recorded.
      for (const host of ['localhost', 'app.localhost', '127.0.0.1']) {
        expect(states.some((s) => s.host === host)).toBe(false);
        expect(await repo.record(host)).toBeNull();
        expect(await keeper.secureContextFor(host)).toBeNull();
      }
      await expect(keeper.forceRenew('app.localhost')).rejects.toThrow(/never/);
      expect(counting.started.get('localhost')).toBeUndefined();
      // The challenge rows are gone once the order is done.
      expect(await dataSource.query(`SELECT count(*)::int AS n FROM edge_acme_challenges`)).toEqual([{ n: 0 }]);
    },
  );

  it('forceRenew swaps the certificate (a new serial) while the served one keeps answering', async () => {
    await issued();
    const before = keeper.servedSerial(HOST);
    expect(before).toBeTruthy();
    let handshakes = 0;
    let stop = false;
    const serving = (async () => {
      while (!stop) {
        const chain = await servedChain(HOST);
        expect(chain[0]!.checkHost(HOST)).toBe(HOST);
        handshakes++;
      }
    })();
    expect(await keeper.forceRenew(HOST)).toBe('active');
    stop = true;
    await serving;
    expect(handshakes).toBeGreaterThan(0);
    const after = keeper.servedSerial(HOST);
    expect(after).not.toBe(before);
    expect(new X509Certificate((await repo.stored(HOST))!.certPem).serialNumber).toBe(after);
    expect(await keeper.secureContextFor(HOST)).not.toBeNull();
    expect((await servedChain(HOST))[0]!.serialNumber).toBe(after);
  });

  it('a failed validation keeps the stored and served certificate, records pebble’s error and moves next_attempt_at forward', async () => {
    await issued();
    const serial = keeper.servedSerial(HOST);
    const failuresBefore = (await repo.record(HOST))!.failures;
    const storedBefore = (await repo.stored(HOST))!;
    await pebble.breakDns(HOST);
    try {
      const started = Date.now();
      expect(await keeper.forceRenew(HOST)).toBe('failed');
      const failure = states.at(-1)!;
      expect(failure).toMatchObject({ host: HOST, state: 'failed' });
      // Pebble's own words: its validation connected to the dead address and was refused.
      expect(failure.error).toMatch(/127\.0\.0\.2/);
      expect(failure.error).toMatch(/refused|connect/i);
      const record = (await repo.record(HOST))!;
      expect(record.lastError).toBe(failure.error);
      expect(record.failures).toBe(failuresBefore + 1);
      expect(record.nextAttemptAt.getTime()).toBeGreaterThanOrEqual(started + 55_000);
      expect(record.leasedBy).toBeNull();
      const storedAfter = (await repo.stored(HOST))!;
      expect(storedAfter.certPem).toBe(storedBefore.certPem);
      expect(storedAfter.keySealed).toBe(storedBefore.keySealed);
      expect(keeper.servedSerial(HOST)).toBe(serial);
      expect((await servedChain(HOST))[0]!.serialNumber).toBe(serial);
    } finally {
      await pebble.restoreDns(HOST);
    }
  });

  it('two keepers (two edge replicas) never issue for one host at once', async () => {
    // The second replica has its own issuer (its own ACME client on the same stored account).
    const other = newKeeper(counting.wrap(newIssuer()), 'edge-b');
    counting.delayMs = 500;
    try {
      const hosts = ['second.example.test', 'third.example.test', 'fourth.example.test'];
      wanted = [HOST, ...hosts];
      const passes = Promise.all([keeper.poke(), other.poke()]);
      // While the orders run, every due host is leased to exactly one of them.
      let leases = await Promise.all(hosts.map((host) => repo.record(host)));
      for (const deadline = Date.now() + 5_000; !leases.some((r) => r?.leasedBy) && Date.now() < deadline; ) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        leases = await Promise.all(hosts.map((host) => repo.record(host)));
      }
      expect(leases.filter((r) => r?.leasedBy).length).toBeGreaterThan(0);
      for (const r of leases) if (r?.leasedBy) expect(['edge-a', 'edge-b']).toContain(r.leasedBy);
      await Promise.all([passes, keeper.poke(), other.poke()]);
      // Both replicas took part (each keeper orders at most 2 hosts at once, and 3 were due).
      const active = states.filter((s) => hosts.includes(s.host) && s.state === 'active');
      expect(new Set(active.map((s) => s.host)).size).toBe(3);
      expect(new Set(active.map((s) => s.holder))).toEqual(new Set(['edge-a', 'edge-b']));
      for (const host of hosts) {
        expect(counting.started.get(host), host).toBe(1);
        expect(counting.maxInFlight.get(host), host).toBe(1);
        expect(await repo.stored(host)).not.toBeNull();
        // Both replicas serve it, whichever issued it.
        expect(await other.secureContextFor(host)).not.toBeNull();
        expect(await keeper.secureContextFor(host)).not.toBeNull();
      }
      // A forced renewal on both at once: one orders, the other finds the lease taken.
      const outcomes = await Promise.all([keeper.forceRenew(hosts[0]!), other.forceRenew(hosts[0]!)]);
      expect(outcomes.sort()).toEqual(['active', 'busy']);
      expect(counting.maxInFlight.get(hosts[0]!)).toBe(1);
      expect(counting.started.get(hosts[0]!)).toBe(2);
    } finally {
      counting.delayMs = 0;
      await other.stop();
    }
  });

  it('a lease left by a replica that died runs out, and then another replica takes the host over', async () => {
    const host = 'orphan.example.test';
    expect(await repo.claim(host, 'edge-dead', 300)).toMatchObject({ host, hasCertificate: false });
    expect(await repo.claim(host, 'edge-a', 60_000)).toBeNull();
    expect(await repo.due(5, 'edge-a', [host], 60_000)).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await repo.due(5, 'edge-a', [host], 60_000)).toEqual([{ host, failures: 0, hasCertificate: false }]);
    expect((await repo.record(host))!.leasedBy).toBe('edge-a');
    await repo.forget(host);
    expect(await repo.record(host)).toBeNull();
  });
});

describe('a wildcard certificate for the apps domain through the DNS hook (DNS-01) against pebble', () => {
  const WILDCARD = '*.apps.example.test';
  let hookDir: string;
  let wildcardKeeper: CertificateKeeper;
  const wildcardStates: Array<{ host: string; state: CertificateState; error?: string }> = [];
  const calls = () =>
    readFileSync(path.join(hookDir, 'calls'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { action: string; name: string; value: string; env: string[] });

  beforeAll(() => {
    hookDir = mkdtempSync(path.join(tmpdir(), 'slipway-dns-hook-'));
    process.env.DNS_STUB_MANAGEMENT = pebble.dns.managementUrl;
    // The edge's own variables stay in the edge.
    process.env.SLIPWAY_TEST_WITHHELD = 'not for the hook';
    const issuer = new AcmeIssuer({
      directoryUrl: pebble.directoryUrl,
      caFile: pebble.caFile,
      codec,
      repo,
      pollMinMs: 100,
      pollMaxMs: 1_000,
      dnsHook: new DnsHook(writeDnsHook(hookDir)),
    });
    wildcardKeeper = new CertificateKeeper({
      wanted: async () => [WILDCARD],
      issuer,
      repo,
      codec,
      log,
      holder: 'edge-w',
      intervalMs: 3_600_000,
      onState: (host, state, error) => wildcardStates.push({ host, state, error }),
    });
  });

  afterAll(async () => {
    await wildcardKeeper?.stop();
    delete process.env.DNS_STUB_MANAGEMENT;
    delete process.env.SLIPWAY_TEST_WITHHELD;
    if (hookDir) rmSync(hookDir, { recursive: true, force: true });
  });

  /** The wildcard, issued now unless an earlier test issued it already: each test can run alone. */
  async function wildcardIssued(): Promise<string> {
    if (!(await repo.stored(WILDCARD))) await wildcardKeeper.poke();
    return wildcardKeeper.servedSerial(WILDCARD)!;
  }

  it('obtains *.<domain> through the hook, serves it for every name one label under it, and removes the record', async () => {
    await wildcardKeeper.poke();
    expect(wildcardStates.map((s) => s.state)).toEqual(['issuing', 'active']);
    const serial = wildcardKeeper.servedSerial(WILDCARD);
    expect(serial).toBeTruthy();
    const root = new X509Certificate(rootPem);
    for (const name of ['one.apps.example.test', 'two.apps.example.test']) {
      const [leaf, intermediate] = await servedChain(name);
      expect(leaf!.serialNumber).toBe(serial);
      expect(leaf!.checkHost(name), name).toBe(WILDCARD);
      expect(leaf!.subjectAltName).toBe(`DNS:${WILDCARD}`);
      expect(intermediate!.checkIssued(root)).toBe(true);
    }
    // Only a wildcard of a real domain is ever asked for.
    expect(isIssuableHost(WILDCARD)).toBe(true);
    for (const host of ['*.localhost', '*.test', '*.*.example.test', 'a.*.example.test', '*.127.0.0.1'])
      expect(isIssuableHost(host), host).toBe(false);
    // A wildcard covers one label: neither the domain itself nor a name two labels down.
    expect(await wildcardKeeper.secureContextFor('apps.example.test')).toBeNull();
    expect(await wildcardKeeper.secureContextFor('a.b.apps.example.test')).toBeNull();
    expect(await wildcardKeeper.secureContextFor(WILDCARD)).toBeNull();

    // The record pebble looked up, published then removed with the same value, named as lego's exec hooks get it.
    const [present, cleanup] = calls();
    expect(present).toMatchObject({ action: 'present', name: '_acme-challenge.apps.example.test.' });
    expect(present!.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(cleanup).toMatchObject({ action: 'cleanup', name: present!.name, value: present!.value });
    // The hook got the operator's variables (its provider's token would be one), none of the edge's own.
    expect(present!.env).toContain('DNS_STUB_MANAGEMENT');
    expect(present!.env.filter((name) => /^(SLIPWAY_|DATABASE_|REDIS_)/.test(name))).toEqual([]);
  });

  it('a hook that fails keeps the wildcard served and records what the hook said', async () => {
    const serial = await wildcardIssued();
    writeFileSync(path.join(hookDir, 'fail'), '');
    try {
      expect(await wildcardKeeper.forceRenew(WILDCARD)).toBe('failed');
      const record = (await repo.record(WILDCARD))!;
      expect(record.lastError).toMatch(/DNS hook's present for _acme-challenge\.apps\.example\.test\. exited with 3/);
      expect(record.lastError).toContain('provider refused: zone apps.example.test is read-only');
      expect(wildcardKeeper.servedSerial(WILDCARD)).toBe(serial);
      expect((await servedChain('one.apps.example.test'))[0]!.serialNumber).toBe(serial);
    } finally {
      rmSync(path.join(hookDir, 'fail'), { force: true });
    }
    expect(existsSync(path.join(hookDir, 'fail'))).toBe(false);
  });
});
