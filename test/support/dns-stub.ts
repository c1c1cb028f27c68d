/**
 * A DNS server whose answers the test sets: Debian's `pebble-challtestsrv` (the ACME test
 * server's companion), on free loopback ports. Every name resolves to 127.0.0.1 unless the
 * test says otherwise; TXT records are what the test sets. Stands in for the public DNS a
 * custom domain's owner publishes records in.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { Resolver } from 'node:dns/promises';
import { request } from 'node:http';
import { freePort } from './ports.js';

export interface DnsStub {
  /** `127.0.0.1:<port>`: give it to a resolver (SLIPWAY_DOMAIN_DNS_SERVERS, pebble's -dnsserver). */
  server: string;
  /** `http://127.0.0.1:<port>`: pebble-challtestsrv's management API (`POST /set-txt {host, value}`, `/clear-txt`). */
  managementUrl: string;
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
  // The stub keeps running when its UDP socket cannot bind (it only logs it), and resolvers ask
  // over UDP: a port taken by another process's DNS server would silently answer for it. So the
  // port must be free for both, and the stub must be seen answering a name only it knows.
  for (let attempt = 1; ; attempt++) {
    const stub = await launch(await freeTcpAndUdpPort(), await freePort());
    const problem = await stub.check();
    if (!problem) return stub.api;
    await stub.api.stop();
    if (attempt === 3) throw new Error(`pebble-challtestsrv does not answer: ${problem}\n${stub.api.output()}`);
  }
}

async function launch(dnsPort: number, managementPort: number) {
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
  const api: DnsStub = {
    server: `127.0.0.1:${dnsPort}`,
    managementUrl: `http://127.0.0.1:${managementPort}`,
    setTxt: (name, value) => manage('/set-txt', { host: fqdn(name), value }),
    clearTxt: (name) => manage('/clear-txt', { host: fqdn(name) }),
    setA: (host, addresses) => manage('/add-a', { host, addresses }),
    clearA: (host) => manage('/clear-a', { host }),
    output: () => logs.join(''),
    stop: () => stopChild(child),
  };
  /** Null once the stub answers over UDP with what was set in it alone; else what went wrong. */
  const check = async (): Promise<string | null> => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        await manage('/clear-a', { host: 'probe.invalid' });
        break;
      } catch (err) {
        if (Date.now() > deadline || child.exitCode !== null) return `did not start: ${(err as Error).message}`;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    if (/bind: address already in use/.test(logs.join(''))) return `port ${dnsPort} is taken`;
    const name = `probe-${randomBytes(6).toString('hex')}.invalid`;
    const marker = '127.0.0.77';
    await api.setA(name, [marker]);
    const resolver = new Resolver({ timeout: 2_000, tries: 1 });
    resolver.setServers([api.server]);
    try {
      const answer = await resolver.resolve4(name);
      return answer.includes(marker) ? null : `another server answered on ${api.server}: ${answer.join(', ')}`;
    } catch (err) {
      return `no answer on ${api.server}: ${(err as Error).message}`;
    } finally {
      await api.clearA(name);
    }
  };
  return { api, check };
}

/** A port free on 127.0.0.1 for TCP and UDP alike a moment ago. */
async function freeTcpAndUdpPort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    const free = await new Promise<boolean>((resolve) => {
      const socket = createSocket('udp4');
      socket.once('error', () => resolve(false));
      socket.bind(port, '127.0.0.1', () => socket.close(() => resolve(true)));
    });
    if (free) return port;
  }
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
