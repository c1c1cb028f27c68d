import { chownSync } from 'node:fs';
import path from 'node:path';
import { SANDBOX_PATHS, sandboxCommand, sandboxEnvironment } from '../sandbox/command.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import { networkOwner, type LaunchSpec } from './instance-launch.js';
import type { InstanceRecord, ProcessStore } from './process-store.js';

/** A process to spawn for an instance: what runs, where, with what environment, and its seccomp program. */
export interface InstanceCommand {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  seccomp?: Buffer;
}

/** What `instanceCommand` needs of the runtime that launches the instance. */
export interface CommandContext {
  /** Null: instances run unsandboxed, as this process's user (the documented opt-out). */
  sandbox: Sandbox | null | undefined;
  store: ProcessStore;
  /** The deployment's runtime dir (ProcessRuntime.deploymentDir). */
  deploymentDir: string;
}

/**
 * What runs: the start command in the artifact, sandboxed (the deployment's uid, its cgroup
 * `i-<instance id>`, its network namespace `i-<instance id>` with its fronts opened to it)
 * unless the sandbox is off.
 */
export async function instanceCommand(
  spec: LaunchSpec,
  record: InstanceRecord,
  home: string,
  { sandbox, store, deploymentDir }: CommandContext,
): Promise<InstanceCommand> {
  const artifact = spec.artifact;
  if (!artifact) throw new Error('An instance needs an artifact or an image to run.');
  const { start } = artifact.manifest;
  const runtimeEnv = {
    PORT: String(record.port),
    // npm would otherwise look for updates and funding on every start.
    NPM_CONFIG_UPDATE_NOTIFIER: 'false',
    NPM_CONFIG_FUND: 'false',
  };
  const pathDirs = [path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'];
  if (!sandbox)
    return {
      command: start.command,
      args: start.args,
      cwd: artifact.cwd,
      env: sandboxEnvironment(spec.env, { home, path: pathDirs, extra: runtimeEnv }),
    };
  const uid = await sandbox.identities.uidOf(spec.deploymentId);
  chownSync(home, uid, uid);
  const cgroup = await sandbox.limit(`i-${record.id}`, spec.limits ?? {});
  const net = await sandbox.network.attach(networkOwner(record));
  await sandbox.network.allowFronts(net.address, spec.frontPorts ?? []);
  record.address = net.address;
  await store.update(record.id, 'starting', { address: net.address });
  const wrapped = sandboxCommand({
    uid,
    gid: uid,
    readOnly: [{ from: artifact.dir, to: SANDBOX_PATHS.artifact }],
    writable: [{ from: home, to: SANDBOX_PATHS.home }],
    cwd: path.join(SANDBOX_PATHS.artifact, path.relative(artifact.dir, artifact.cwd)),
    command: start.command,
    args: start.args,
    openFiles: sandbox.settings.openFiles,
    cgroupProcs: cgroup.procsFiles,
    dieWithParent: false,
    network: net,
  });
  const env = sandboxEnvironment(spec.env, { home: SANDBOX_PATHS.home, path: pathDirs, extra: runtimeEnv });
  // The deployment's runtime dir: outside, the sandbox's own processes show where they belong.
  return { ...wrapped, cwd: deploymentDir, env };
}
