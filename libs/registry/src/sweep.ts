import { execFile } from 'node:child_process';
import {
  prepareRegistry,
  startRegistry,
  type RegistryProcessConfig,
  type RunningRegistry,
} from './registry-process.js';

/** The longest a `garbage-collect` run may take. */
const SWEEP_TIMEOUT_MS = 30 * 60_000;

export interface SweepOutcome {
  ok: boolean;
  /** The registry serving again (read-write), or null when none ran before. */
  registry: RunningRegistry | null;
  /** What `garbage-collect` printed (its last lines). */
  output: string;
}

/**
 * distribution's `garbage-collect` (mark: blobs some manifest names; sweep: the rest are
 * deleted), run only while nothing can be pushed: a running registry is restarted read-only
 * for the sweep (pulls keep being served; a push is refused and the client retries) and
 * read-write after it, whether the sweep worked or not. With none running it is run as is.
 */
export async function sweepRegistry(
  config: RegistryProcessConfig,
  current: RunningRegistry | null,
  log?: (msg: string) => void,
): Promise<SweepOutcome> {
  let readOnly: RunningRegistry | null = null;
  if (current) {
    await current.stop();
    readOnly = await startRegistry(config, { readOnly: true, log });
  }
  const { ok, output } = await new Promise<{ ok: boolean; output: string }>((resolve) =>
    execFile(
      config.registry.binary,
      ['garbage-collect', prepareRegistry(config)],
      { encoding: 'utf8', timeout: SWEEP_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const text = `${stdout}${stderr}`.trim().split('\n').slice(-20).join('\n');
        resolve(
          err
            ? { ok: false, output: `${config.registry.binary} garbage-collect failed: ${text || err.message}` }
            : { ok: true, output: text },
        );
      },
    ),
  );
  if (!readOnly) return { ok, registry: null, output };
  await readOnly.stop();
  return { ok, registry: await startRegistry(config, { log }), output };
}
