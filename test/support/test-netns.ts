import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';

/**
 * A network namespace this test creates to stand in for another host (the compose network's
 * Postgres, a public service): it holds `address` behind a veth whose host side holds the /30's
 * other address, and runs a TCP listener on `port` that answers `pong`. Every packet a test sends
 * to `address` stays on this machine, whatever the policy under test does.
 */
export interface TestHost {
  address: string;
  port: number;
  /** What the listener printed after `ready`, line by line (a `server` script's record of what it was sent). */
  output: string[];
  close: () => Promise<void>;
}

/** The default listener: a TCP server that answers `pong` to every connection. */
const PONG = `require('node:net').createServer((s) => s.end('pong'))`;

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' });

/**
 * Addresses this machine itself needs to reach: its DNS servers, its default gateway and the npm
 * registry's addresses (builds install from it). On some machines these sit in the very ranges a
 * test borrows — here the registry resolves into TEST-NET-3 — and a test host's route to the
 * same /30 would cut the machine off from them.
 */
async function addressesInUse(): Promise<string[]> {
  const resolvers =
    readFileSync('/etc/resolv.conf', 'utf8')
      .match(/^nameserver\s+(\S+)/gm)
      ?.map((l) => l.split(/\s+/)[1]!) ?? [];
  const gateway = /default via (\S+)/.exec(
    execFileSync('ip', ['-4', 'route', 'show', 'default'], { encoding: 'utf8' }),
  )?.[1];
  const registry = new URL(process.env.npm_config_registry || 'https://registry.npmjs.org/').hostname;
  const registryAddresses = (await lookup(registry, { all: true, family: 4 }).catch(() => [])).map((a) => a.address);
  return [...resolvers, ...(gateway ? [gateway] : []), ...registryAddresses];
}

/** A random /30 network under `prefix` (three octets) holding none of the addresses this machine needs (see addressesInUse). */
export async function freeTestNetwork(prefix: string): Promise<string> {
  const inUse = new Set(
    (await addressesInUse())
      .filter((a) => a.startsWith(`${prefix}.`))
      .map((a) => Math.floor(Number(a.split('.')[3]) / 4) * 4),
  );
  const free = Array.from({ length: 60 }, (_, i) => i * 4).filter((d) => !inUse.has(d));
  return `${prefix}.${free[Math.floor(Math.random() * free.length)]}`;
}

/**
 * `network` is a /30's network address (a.b.c.d, d a multiple of 4): .1 the host side, .2 the test
 * host. `server`: a JavaScript expression for the listener (a `net.Server` or `http.Server`, not
 * listening yet); whatever it prints to stdout after it listens is kept in `output`.
 */
export async function startTestHost(network: string, port: number, server_ = PONG): Promise<TestHost> {
  const parts = network.split('.').map(Number);
  const at = (n: number) => [...parts.slice(0, 3), parts[3]! + n].join('.');
  const id = randomBytes(4).toString('hex');
  const name = `slwtest-${id}`;
  const [outside, inside] = [`to${id}`, `ti${id}`];
  const output: string[] = [];
  ip('netns', 'add', name);
  let server: ChildProcess | undefined;
  try {
    ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', inside, 'netns', name);
    ip('addr', 'add', `${at(1)}/30`, 'dev', outside);
    ip('link', 'set', outside, 'up');
    ip('-n', name, 'addr', 'add', `${at(2)}/30`, 'dev', inside);
    ip('-n', name, 'link', 'set', inside, 'up');
    ip('-n', name, 'link', 'set', 'lo', 'up');
    ip('-n', name, 'route', 'add', 'default', 'via', at(1));
    server = spawn(
      'ip',
      [
        'netns',
        'exec',
        name,
        process.execPath,
        '-e',
        `(${server_}).listen(${port}, '${at(2)}', () => console.log('ready'))`,
      ],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    await new Promise<void>((resolve, reject) => {
      let ready = false;
      let rest = '';
      server!.stdout!.on('data', (chunk: Buffer) => {
        rest += chunk.toString('utf8');
        const lines = rest.split('\n');
        rest = lines.pop()!;
        for (const line of lines) {
          if (ready) output.push(line);
          else if (line === 'ready') {
            ready = true;
            resolve();
          }
        }
      });
      server!.once('exit', (code) => reject(new Error(`test host listener exited (${code})`)));
    });
  } catch (err) {
    server?.kill('SIGKILL');
    ip('link', 'del', outside);
    ip('netns', 'delete', name);
    throw err;
  }
  return {
    address: at(2),
    port,
    output,
    close: async () => {
      server!.kill('SIGKILL');
      await new Promise((r) => setTimeout(r, 100));
      try {
        ip('link', 'del', outside);
      } catch {
        // gone with the namespace
      }
      ip('netns', 'delete', name);
    },
  };
}
