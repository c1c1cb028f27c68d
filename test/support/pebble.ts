/**
 * Pebble (Debian's `pebble`), the ACME test server, standing in for a public CA, with
 * `pebble-challtestsrv` as its DNS: every name resolves to 127.0.0.1 (where the test's HTTP-01
 * responder listens on `httpPort`) unless the test points it elsewhere (`breakDns`). Both run as
 * children on free loopback ports with their state in a temporary directory; `stop()` ends them
 * and removes it.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startDnsStub, stopChild, type DnsStub } from './dns-stub.js';
import { freePort } from './ports.js';

export interface Pebble {
  /** The ACME directory (`https://127.0.0.1:<port>/dir`). */
  directoryUrl: string;
  /** The certificate pebble's HTTPS listeners present (trust it for the directory: SLIPWAY_ACME_CA_FILE). */
  caFile: string;
  /** The root pebble issues under (made anew at every start): what an issued chain verifies against. */
  rootPem(): Promise<string>;
  /** Pebble's DNS (a test's own records: TXT for domain verification). */
  dns: DnsStub;
  /** Makes `host` resolve to an address where nothing answers, so HTTP-01 validation fails. */
  breakDns(host: string): Promise<void>;
  /** `host` resolves to 127.0.0.1 again. */
  restoreDns(host: string): Promise<void>;
  /** Everything the two processes printed so far. */
  output(): string;
  stop(): Promise<void>;
}

export interface PebbleOptions {
  /** The port pebble's VA sends HTTP-01 requests to (the test's responder). */
  httpPort: number;
}

/**
 * A loopback address where nothing listens (the test's responder binds 127.0.0.1 only): pebble's
 * validation there is refused at once, where an unroutable address would wait for a timeout.
 */
const DEAD_ADDRESS = '127.0.0.2';

export async function startPebble(options: PebbleOptions): Promise<Pebble> {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-pebble-'));
  const caFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=pebble test listener',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      keyFile,
      '-out',
      caFile,
    ],
    { stdio: 'ignore', timeout: 10_000 },
  );
  const [acmePort, managementPort, tlsPort] = await Promise.all([freePort(), freePort(), freePort()]);
  const config = path.join(dir, 'pebble-config.json');
  writeFileSync(
    config,
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${acmePort}`,
        managementListenAddress: `127.0.0.1:${managementPort}`,
        certificate: caFile,
        privateKey: keyFile,
        httpPort: options.httpPort,
        tlsPort,
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
      },
    }),
  );

  const dns = await startDnsStub();
  const logs: string[] = [];
  const children: ChildProcess[] = [];
  const run = (command: string, args: string[], env: Record<string, string> = {}) => {
    const child = spawn(command, args, {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d: Buffer) => logs.push(d.toString()));
    child.stderr!.on('data', (d: Buffer) => logs.push(d.toString()));
    child.on('error', (err) => logs.push(`${command}: ${err.message}\n`));
    children.push(child);
    return child;
  };
  const stop = async () => {
    await Promise.all(children.map(stopChild));
    await dns.stop();
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    run('pebble', ['-config', config, '-dnsserver', dns.server], {
      PEBBLE_VA_NOSLEEP: '1',
      PEBBLE_WFE_NONCEREJECT: '0',
      // Every order validates afresh: a test that breaks a host's DNS must see it fail.
      PEBBLE_AUTHZREUSE: '0',
    });
    const agent = new Agent({ ca: readFileSync(caFile) });
    await waitFor(
      () => get(`https://127.0.0.1:${acmePort}/dir`, agent),
      () => logs.join(''),
    );
    return {
      directoryUrl: `https://127.0.0.1:${acmePort}/dir`,
      caFile,
      rootPem: () => get(`https://127.0.0.1:${managementPort}/roots/0`, agent),
      dns,
      breakDns: (host) => dns.setA(host, [DEAD_ADDRESS]),
      restoreDns: (host) => dns.clearA(host),
      output: () => logs.join('') + dns.output(),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function waitFor(probe: () => Promise<unknown>, output: () => string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await probe();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`pebble did not start: ${(err as Error).message}\n${output()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

function get(url: string, agent: Agent): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, timeout: 5_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        res.statusCode === 200
          ? resolve(Buffer.concat(chunks).toString())
          : reject(new Error(`${url}: ${res.statusCode}`)),
      );
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/**
 * An operator's DNS hook (SLIPWAY_ACME_DNS_HOOK): publishes and removes the TXT record through the
 * DNS stub's management API, as a real hook calls its provider's; logs each call and the names of
 * the variables it was given (to `calls` in `dir`); fails with its own message while `fail` exists
 * in `dir`. It reaches the stub at `DNS_STUB_MANAGEMENT` (its environment: `pebble.dns.managementUrl`).
 */
export function writeDnsHook(dir: string): string {
  const hook = path.join(dir, 'dns-hook');
  writeFileSync(
    hook,
    `#!${process.execPath}
const fs = require('node:fs');
const path = require('node:path');
const [action, name, value] = process.argv.slice(2);
const dir = ${JSON.stringify(dir)};
fs.appendFileSync(path.join(dir, 'calls'), JSON.stringify({ action, name, value, env: Object.keys(process.env) }) + '\\n');
if (fs.existsSync(path.join(dir, 'fail'))) {
  process.stderr.write('provider refused: zone apps.example.test is read-only');
  process.exit(3);
}
const route = action === 'present' ? '/set-txt' : '/clear-txt';
fetch(process.env.DNS_STUB_MANAGEMENT + route, {
  method: 'POST',
  body: JSON.stringify(action === 'present' ? { host: name, value } : { host: name }),
}).then((res) => process.exit(res.ok ? 0 : 1), () => process.exit(1));
`,
    { mode: 0o700 },
  );
  return hook;
}
