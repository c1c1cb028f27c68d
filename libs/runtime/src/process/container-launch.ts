import type { ContainerImage, ContainerInstances } from '../container/container-instances.js';
import { ImageError } from '../container/image-config.js';
import { runcError } from '../container/runc.js';
import { containerStartFailure } from '../container/start-failure.js';
import { ArtifactError } from './artifact.js';
import { instanceLabel, type LaunchedInstance, type LaunchSpec } from './instance-launch.js';
import { linesSinceLastStart, START_HEADER } from './instance-log.js';
import type { InstanceRecord, ProcessStore } from './process-store.js';

/** How often `runc run` is tried for one instance start before the failure counts as deterministic. */
export const CONTAINER_START_ATTEMPTS = 3;
/** The pause before the second try (twice that before the third). */
const CONTAINER_START_PAUSE_MS = 1_000;

/**
 * A container that `runc run` could not start, the same way each of CONTAINER_START_ATTEMPTS
 * times, for a reason other than its command (launchContainer): the rollout fails with it.
 */
export class ContainerStartError extends ArtifactError {
  override name = 'ContainerStartError';
}

/** What `launchContainer` needs of the runtime that launches the instance. */
export interface ContainerLaunchContext {
  /** The embedded container runtime (needs the sandbox); null: images cannot run here. */
  containers: ContainerInstances | null | undefined;
  store: ProcessStore;
  /** Stops a failed attempt at once (ProcessRuntime.stop with no grace). */
  stop: (record: InstanceRecord) => Promise<void>;
}

/**
 * A container instead of a process (ContainerInstances); its init's pid is the row's pid.
 *
 * A start that fails is classified: a command that cannot be executed is the image's fault and
 * fails at once (ImageError). Any other failure of `runc run` (a mount the image's root
 * filesystem cannot take, a cgroup or namespace the kernel refused) may be the machine's for a
 * moment, so it is tried CONTAINER_START_ATTEMPTS times in all, a short pause between; failing
 * that often, it is taken as deterministic and fails the rollout with runc's words
 * (ContainerStartError), rather than throwing to the reconciler, whose retries would only
 * repeat it and end with a message that no longer says why.
 */
export async function launchContainer(
  spec: LaunchSpec,
  image: ContainerImage,
  record: InstanceRecord,
  dir: string,
  { containers, store, stop }: ContainerLaunchContext,
): Promise<LaunchedInstance> {
  if (!containers) throw new Error('Images need the embedded container runtime, which needs the sandbox (root, runc).');
  for (let attempt = 1; ; attempt++) {
    try {
      record.pid = await containers.launch(
        record,
        {
          deploymentId: spec.deploymentId,
          image,
          env: spec.env,
          limits: spec.limits ?? {},
          frontPorts: spec.frontPorts ?? [],
          deploymentDir: dir,
          logPath: record.logPath,
          header:
            `${START_HEADER} ${instanceLabel(record)} of revision ${spec.revisionId} ` +
            `(image ${image.digest}) on port ${record.port} (${new Date().toISOString()}) ---\n`,
        },
        async (address) => {
          record.address = address;
          await store.update(record.id, 'starting', { address });
        },
      );
      break;
    } catch (err) {
      // This attempt's lines: those after its own header (the file keeps the earlier ones).
      const lines = await linesSinceLastStart(record.logPath);
      // Its namespace, cgroup and runc state go with it; the row ends `exited`.
      await stop(record).catch(() => store.update(record.id, 'exited'));
      // A command that cannot be executed never will be: the image's fault, not worth a retry.
      const cannot = containerStartFailure(lines, image.config.command);
      if (cannot) throw new ImageError(cannot);
      // runc's own error lines (`time="…" level=error msg="…"`), else what was printed last.
      const said =
        runcError(lines.filter((l) => /\blevel=(error|fatal)\b/.test(l)).join('\n')) || lines.slice(-3).join(' ');
      if (attempt >= CONTAINER_START_ATTEMPTS) {
        throw new ContainerStartError(
          `The container could not be started (${attempt} attempts, failing each time): ${said || (err as Error).message}`,
        );
      }
      spec.log?.(
        `The container of ${instanceLabel(record)} did not start ` +
          `(attempt ${attempt} of ${CONTAINER_START_ATTEMPTS}): ${said || (err as Error).message}; ` +
          `trying again.`,
        'warn',
      );
      await new Promise((r) => setTimeout(r, CONTAINER_START_PAUSE_MS * attempt));
      if (!(await store.update(record.id, 'starting'))) throw new Error(`Instance ${record.id} is gone.`);
      record.status = 'starting';
    }
  }
  await store.update(record.id, 'starting', { pid: record.pid });
  return { record, child: null };
}
