import { lstat, open, readlink } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_PATH, ImageError, type ImageConfig } from './image-config.js';

/** ELF `e_machine` of each `process.arch` this runtime may run on. */
const ELF_MACHINE: Record<string, number> = {
  x64: 62,
  arm64: 183,
  arm: 40,
  ppc64: 21,
  s390x: 22,
  riscv64: 243,
  ia32: 3,
};
const MACHINE_NAME: Record<number, string> = {
  3: 'x86 (32-bit)',
  40: 'arm',
  62: 'amd64',
  183: 'arm64',
  21: 'ppc64',
  22: 's390x',
  243: 'riscv64',
};
const MAX_LINKS = 40;

/**
 * `file` inside `rootfs`, its symbolic links followed the way the container will see them
 * (absolute targets from the image's root, never the host's, `..` stopping at the root); null
 * when some part of it does not exist.
 */
export async function resolveInRoot(rootfs: string, file: string): Promise<string | null> {
  const pending = file.split('/').filter(Boolean);
  const done: string[] = [];
  let links = 0;
  while (pending.length) {
    const part = pending.shift()!;
    if (part === '.') continue;
    if (part === '..') {
      done.pop();
      continue;
    }
    const here = path.join(rootfs, ...done, part);
    const stat = await lstat(here).catch(() => null);
    if (!stat) return null;
    if (stat.isSymbolicLink()) {
      if (++links > MAX_LINKS) return null;
      const target = await readlink(here);
      if (target.startsWith('/')) done.length = 0;
      pending.unshift(...target.split('/').filter(Boolean));
      continue;
    }
    done.push(part);
  }
  return path.join(rootfs, ...done);
}

/** The image's command as an absolute path inside it: as given, or looked up on the image's PATH. */
async function locate(rootfs: string, config: ImageConfig): Promise<{ shown: string; file: string | null }> {
  const name = config.command[0]!;
  if (name.includes('/'))
    return { shown: name, file: await resolveInRoot(rootfs, path.posix.resolve(config.workingDir, name)) };
  for (const dir of (config.env.PATH ?? DEFAULT_PATH).split(':').filter((d) => d.startsWith('/'))) {
    const file = await resolveInRoot(rootfs, path.posix.join(dir, name));
    if (file && (await lstat(file)).isFile()) return { shown: name, file };
  }
  return { shown: name, file: null };
}

/**
 * Refuses an unpacked image whose command can never be executed, before any container is
 * started for it (so the revision fails at once, naming the cause): a WorkingDir the image
 * lacks; a command that is missing, not a regular file, without an execute bit, an ELF binary
 * for another machine, neither ELF nor a `#!` script, or a script whose interpreter is missing. What only shows at exec time
 * (a missing shared library, say) is caught from the container's first words instead
 * (start-failure.ts).
 */
export async function checkEntrypoint(rootfs: string, config: ImageConfig, arch: string = process.arch): Promise<void> {
  const cwd = await resolveInRoot(rootfs, config.workingDir);
  if (!cwd || !(await lstat(cwd)).isDirectory()) {
    throw new ImageError(
      `The image's WorkingDir ${config.workingDir} is not a directory in the image ` +
        `(its root filesystem is read-only here, so it is not created).`,
    );
  }
  const { shown, file } = await locate(rootfs, config);
  const cannot = (why: string) => new ImageError(`The image's command cannot start: ${shown}: ${why}.`);
  if (!file) throw cannot('no such file or directory');
  const stat = await lstat(file);
  if (!stat.isFile()) throw cannot('not a regular file');
  if ((stat.mode & 0o111) === 0) throw cannot('permission denied (no execute bit)');
  const head = Buffer.alloc(256);
  const handle = await open(file, 'r');
  let length: number;
  try {
    ({ bytesRead: length } = await handle.read(head, 0, head.length, 0));
  } finally {
    await handle.close();
  }
  if (length >= 20 && head.readUInt32BE(0) === 0x7f454c46) {
    const machine = head[5] === 2 ? head.readUInt16BE(18) : head.readUInt16LE(18);
    const wanted = ELF_MACHINE[arch];
    if (wanted !== undefined && machine !== wanted) {
      throw cannot(
        `exec format error (a binary for ${MACHINE_NAME[machine] ?? `machine ${machine}`}; this machine runs ${MACHINE_NAME[wanted]})`,
      );
    }
    return;
  }
  if (head.subarray(0, 2).toString('latin1') !== '#!')
    throw cannot('exec format error (neither a binary nor a #! script)');
  const interpreter = head.subarray(2, length).toString('latin1').split('\n')[0]!.trim().split(/\s+/)[0] ?? '';
  if (!interpreter.startsWith('/') || !(await resolveInRoot(rootfs, interpreter))) {
    throw cannot(`its interpreter ${interpreter || '(none)'} does not exist in the image`);
  }
}
