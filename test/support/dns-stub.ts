/**
 * A DNS server whose answers the test sets: Debian's `pebble-challtestsrv` (the ACME test
 * server's companion), on free loopback ports. Every name resolves to 127.0.0.1 unless the
 * test says otherwise; TXT records are what the test sets. Stands in for the public DNS a
 * custom domain's owner publishes records in.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { freePort } from './ports.js';

export interface DnsStub {
  /** `127.0.0.1:<port>`: give it to a resolver (SLIPWAY_DOMAIN_DNS_SERVERS, pebble's -dnsserver). */
  server: string;
  setTxt(name: string, value: string): Promise<void>;
  clearTxt(name: string): Promise<void>;
  /** `host` resolves to `addresses` instead of 127.0.0.1. */
  setA(host: string, addresses: string[]): Promise<void>;
  /** `host` resolves to 127.0.0.1 again. */
  clearA(host: string): Promise<void>;
  output(): string;
  stop(): Promise<void>;
}

export async function startDnsStub(): Promise<DnsStub> {
  const [dnsPort, managementPort] = [await freePort(), await freePort()];
  const logs: string[] = [];
  const child: ChildProcess = spawn(
    'pebble-challtestsrv',
    [
      '-defaultIPv4',
      '127.0.0.1',
      '-defaultIPv6',
      '',
      '-management',
      `127.0.0.1:${managementPort}`,
      '-dns01',
      `127.0.0.1:${dnsPort}`,
      '-http01',
      '',
      '-https01',
      '',
      '-tlsalpn01',
      '',
    ],
    { env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout!.on('data', (d: Buffer) => logs.push(d.toString()));
  child.stderr!.on('data', (d: Buffer) => logs.push(d.toString()));
  child.on('error', (err) => logs.push(`pebble-challtestsrv: ${err.message}\n`));
  const manage = (path: string, body: unknown) => post(`http://127.0.0.1:${managementPort}${path}`, body);
  const fqdn = (name: string) => (name.endsWith('.') ? name : `${name}.`);
  const stop = () => stopChild(child);
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      await manage('/clear-a', { host: 'probe.invalid' });
      break;
    } catch (err) {
      if (Date.now() > deadline || child.exitCode !== null) {
        await stop();
        throw new Error(`pebble-challtestsrv did not start: ${(err as Error).message}\n${logs.join('')}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    server: `127.0.0.1:${dnsPort}`,
    setTxt: (name, value) => manage('/set-txt', { host: fqdn(name), value }),
    clearTxt: (name) => manage('/clear-txt', { host: fqdn(name) }),
    setA: (host, addresses) => manage('/add-a', { host, addresses }),
    clearA: (host) => manage('/clear-a', { host }),
    output: () => logs.join(''),
    stop,
  };
}

/** SIGTERM, then SIGKILL after 3 s; resolves once the child is gone. */
export function stopChild(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

function post(url: string, body: unknown): Promise<void> {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = request(
      url,
      {
        method: 'POST',
        timeout: 5_000,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
      },
      (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`${url}: ${res.statusCode}`))));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${url}: timed out`)));
    req.on('error', reject);
    req.end(data);
  });
}
