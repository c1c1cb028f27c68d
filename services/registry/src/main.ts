/**
 * `npm start`'s image registry (docs/operations.md, The image registry): CNCF distribution
 * (`docker-registry`) with the configuration Slipway generates, on a unix socket behind the push
 * guard that holds the registry's address and refuses pushes past `registry_bytes`
 * (libs/registry/src/push-guard.ts), restarted when it exits on its
 * own or fails to start (at most 5 times a minute), stopped with this process. SIGUSR2 (sent by `pnpm slipway
 * registry gc`) sweeps its garbage with the registry read-only meanwhile (libs/registry/src/sweep.ts).
 */
import { spawnSync } from 'node:child_process';
import { loadConfigOrExit, platformCredentials } from '@slipway/config';
import { createLogger } from '@slipway/logging';
import {
  announceSupervisor,
  recordSweep,
  registryAnswers,
  startRegistry,
  sweepRegistry,
  type RunningRegistry,
} from '@slipway/registry';

const config = loadConfigOrExit();
// The same JSON lines as every other Slipway process (docker-registry's own go through as it writes them).
const log = createLogger({ name: 'registry', level: config.logLevel, secrets: platformCredentials(config) });
const say = (msg: string) => log.info(msg);

let current: RunningRegistry | null = null;
let stopping = false;
/** A sweep under way: the registry's exit meanwhile is planned, not a crash. */
let sweeping: Promise<void> | null = null;
const restarts: number[] = [];

function supervise(registry: RunningRegistry): RunningRegistry {
  registry.child.stdout!.pipe(process.stdout);
  registry.child.stderr!.pipe(process.stderr);
  return registry;
}

async function run(): Promise<void> {
  if (await registryAnswers(config.registry.internalUrl)) {
    log.warn(
      `a registry already answers at ${config.registry.internalUrl}; not starting another (it must use Slipway's token auth)`,
    );
    return;
  }
  // Missing (not root, so not installed): the rest of Slipway runs; only image pushes fail.
  const probe = spawnSync(config.registry.binary, ['--version'], { stdio: 'ignore' });
  if (probe.error || probe.status !== 0) {
    log.warn(
      `${config.registry.binary} does not run (${probe.error?.message ?? `exit ${probe.status}`}): ` +
        `no image registry, pushes will fail. Install Debian's docker-registry, or set SLIPWAY_REGISTRY=off`,
    );
    return;
  }
  const withdraw = announceSupervisor(config);
  process.once('exit', withdraw);
  while (!stopping) {
    let exit: string;
    try {
      current = supervise(await startRegistry(config, { log: say }));
      say(
        `registry listening on ${config.registry.host}:${config.registry.port}, storage ${config.registry.storageDir}`,
      );
      let code = await current.exited;
      // A sweep stops it and runs its own registries; once it is done, `current` is the one serving.
      while (sweeping && !stopping) {
        await sweeping;
        code = await current.exited;
      }
      exit = `docker-registry exited (${code})`;
    } catch (err) {
      // Died (or never answered) while starting: a crash like any other, within the same budget.
      exit = (err as Error).message;
    }
    if (stopping) return;
    const now = Date.now();
    restarts.push(now);
    while (restarts[0]! < now - 60_000) restarts.shift();
    if (restarts.length > 5)
      throw new Error(`docker-registry failed ${restarts.length} times within a minute; last: ${exit}`);
    log.warn(`${exit}; restarting`);
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

process.on('SIGUSR2', () => {
  if (sweeping || stopping || !current) return;
  say('sweeping registry garbage; the registry is read-only meanwhile');
  sweeping = (async () => {
    try {
      const swept = await sweepRegistry(config, current, say);
      if (swept.registry) current = supervise(swept.registry);
      recordSweep(config, { ok: swept.ok, output: swept.output });
      if (swept.ok) say('registry garbage swept');
      else log.error(swept.output);
    } catch (err) {
      recordSweep(config, { ok: false, output: (err as Error).message });
      log.error(`sweeping registry garbage failed: ${(err as Error).message}`);
    } finally {
      sweeping = null;
    }
  })();
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    stopping = true;
    void (current?.stop() ?? Promise.resolve()).then(() => process.exit(0));
  });
}

run().then(
  () => {
    // Nothing to supervise (another registry answers): stay up so `npm start` keeps running.
    if (!stopping && !current) setInterval(() => undefined, 1 << 30);
  },
  (err: Error) => {
    log.fatal(err.message);
    process.exit(1);
  },
);
