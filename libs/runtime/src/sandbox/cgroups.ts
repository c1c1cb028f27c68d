import { access, mkdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import { constants, existsSync } from 'node:fs';
import path from 'node:path';

/** Where the controllers live: one unified v2 hierarchy, or v1's memory, cpu and pids. */
export type CgroupLayout = { version: 2; root: string } | { version: 1; memory: string; cpu: string; pids: string };

export interface CgroupLimits {
  memoryMb: number;
  /** CPUs (fractions allowed); 0 or absent: no CPU limit. */
  cpu?: number;
  pids: number;
}

const CPU_PERIOD_US = 100_000;

/**
 * Finds writable cgroup controllers under `base`: v2 where it is mounted there with the memory
 * controller and writable, v1 otherwise (memory, cpu and pids hierarchies). Null: none usable.
 */
export async function detectCgroups(base = '/sys/fs/cgroup'): Promise<CgroupLayout | null> {
  const writable = (dir: string) =>
    access(dir, constants.W_OK).then(
      () => true,
      () => false,
    );
  const controllers = await readFile(path.join(base, 'cgroup.controllers'), 'utf8').catch(() => null);
  if (controllers !== null && /\bmemory\b/.test(controllers) && (await writable(base)))
    return { version: 2, root: base };
  const v1 = { memory: path.join(base, 'memory'), cpu: path.join(base, 'cpu'), pids: path.join(base, 'pids') };
  for (const dir of Object.values(v1)) {
    if (!existsSync(path.join(dir, 'cgroup.procs')) || !(await writable(dir))) return null;
  }
  return { version: 1, ...v1 };
}

/** One limited group of processes (an instance or a build step). */
export interface Cgroup {
  /** `cgroup.procs` files a process writes its pid to, to join (one per v1 hierarchy). */
  procsFiles: string[];
  /** How many times the kernel's OOM killer killed a process of this group. */
  oomKills(): Promise<number>;
  /** Memory in use now and CPU time used so far by the group; null where the kernel does not say. */
  usage(): Promise<CgroupUsage>;
  /** Removes the group; its processes must be gone. */
  remove(): Promise<void>;
}

/** A cgroup's resource use at one moment. */
export interface CgroupUsage {
  /** Bytes charged to the group now (page cache included, as the limit counts it). */
  memoryBytes: number | null;
  /** CPU time used by the group since it was created, in nanoseconds. */
  cpuNanos: number | null;
}

const readNumber = async (file: string): Promise<number | null> => {
  const text = await readFile(file, 'utf8').catch(() => null);
  const value = text === null ? NaN : Number(text.trim());
  return Number.isFinite(value) ? value : null;
};

/**
 * Creates cgroups under `<controller>/<parent>/<name>` and writes their limits. Recreating a
 * group (a restart) removes the old one first, so its OOM count starts from zero.
 */
export class CgroupWriter {
  constructor(
    private readonly layout: CgroupLayout,
    private readonly parent = 'slipway',
  ) {}

  async create(name: string, limits: CgroupLimits): Promise<Cgroup> {
    const dirs = this.dirs(name);
    await removeDirs(Object.values(dirs));
    const bytes = String(Math.max(1, Math.round(limits.memoryMb)) * 1024 * 1024);
    const quota = limits.cpu && limits.cpu > 0 ? Math.max(1_000, Math.round(limits.cpu * CPU_PERIOD_US)) : null;
    if (this.layout.version === 2) {
      await this.enableV2Controllers();
      const dir = dirs.memory;
      await mkdir(dir, { recursive: true });
      await writeFile(path.join(dir, 'memory.max'), bytes);
      await writeOptional(path.join(dir, 'memory.swap.max'), '0');
      await writeFile(path.join(dir, 'cpu.max'), quota ? `${quota} ${CPU_PERIOD_US}` : `max ${CPU_PERIOD_US}`);
      await writeFile(path.join(dir, 'pids.max'), String(limits.pids));
    } else {
      for (const dir of Object.values(dirs)) await mkdir(dir, { recursive: true });
      await writeFile(path.join(dirs.memory, 'memory.limit_in_bytes'), bytes);
      // Without swap accounting there is no memsw file; with it, swap counts against the limit.
      await writeOptional(path.join(dirs.memory, 'memory.memsw.limit_in_bytes'), bytes);
      await writeFile(path.join(dirs.cpu, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
      await writeFile(path.join(dirs.cpu, 'cpu.cfs_quota_us'), String(quota ?? -1));
      await writeFile(path.join(dirs.pids, 'pids.max'), String(limits.pids));
    }
    return this.handle(name);
  }

  /** The group `name` (whether or not it exists): for reading an OOM count or removing it. */
  handle(name: string): Cgroup {
    const dirs = this.dirs(name);
    const unique = [...new Set(Object.values(dirs))];
    return {
      procsFiles: unique.map((d) => path.join(d, 'cgroup.procs')),
      oomKills: async () => {
        const file =
          this.layout.version === 2
            ? path.join(dirs.memory, 'memory.events')
            : path.join(dirs.memory, 'memory.oom_control');
        const text = await readFile(file, 'utf8').catch(() => '');
        return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0);
      },
      usage: async () => {
        if (this.layout.version === 2) {
          const stat = await readFile(path.join(dirs.cpu, 'cpu.stat'), 'utf8').catch(() => '');
          const usec = /^usage_usec (\d+)$/m.exec(stat)?.[1];
          return {
            memoryBytes: await readNumber(path.join(dirs.memory, 'memory.current')),
            cpuNanos: usec ? Number(usec) * 1000 : null,
          };
        }
        // v1: cpuacct.usage where cpuacct is mounted with cpu (cpu,cpuacct); else the CPU time of
        // the group's processes now (a process that exited takes its share along).
        return {
          memoryBytes: await readNumber(path.join(dirs.memory, 'memory.usage_in_bytes')),
          cpuNanos:
            (await readNumber(path.join(dirs.cpu, 'cpuacct.usage'))) ??
            (await processesCpuNanos(path.join(dirs.memory, 'cgroup.procs'))),
        };
      },
      remove: () => removeDirs(unique),
    };
  }

  private dirs(name: string): { memory: string; cpu: string; pids: string } {
    if (!/^[A-Za-z0-9_.-]+$/.test(name)) throw new Error(`Bad cgroup name '${name}'.`);
    if (this.layout.version === 2) {
      const dir = path.join(this.layout.root, this.parent, name);
      return { memory: dir, cpu: dir, pids: dir };
    }
    return {
      memory: path.join(this.layout.memory, this.parent, name),
      cpu: path.join(this.layout.cpu, this.parent, name),
      pids: path.join(this.layout.pids, this.parent, name),
    };
  }

  private async enableV2Controllers(): Promise<void> {
    if (this.layout.version !== 2) return;
    const parent = path.join(this.layout.root, this.parent);
    await mkdir(parent, { recursive: true });
    for (const dir of [this.layout.root, parent])
      await writeOptional(path.join(dir, 'cgroup.subtree_control'), '+memory +cpu +pids');
  }
}

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ: 100 on Linux). */
const USER_HZ = 100;

/** User + system CPU time of the processes listed in a `cgroup.procs` file, in nanoseconds. */
async function processesCpuNanos(procsFile: string): Promise<number | null> {
  const list = await readFile(procsFile, 'utf8').catch(() => null);
  if (list === null) return null;
  let ticks = 0;
  for (const pid of list.split('\n').filter(Boolean)) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    // Fields after the command name (which may hold spaces), in parentheses: utime is the 12th, stime the 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += (Number(fields[11]) || 0) + (Number(fields[12]) || 0);
  }
  return (ticks * 1e9) / USER_HZ;
}

async function writeOptional(file: string, value: string): Promise<void> {
  if (!existsSync(file)) return;
  await writeFile(file, value).catch(() => undefined);
}

async function removeDirs(dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    await rmdir(dir).catch(async (err: NodeJS.ErrnoException) => {
      // A plain directory (tests) holds the limit files we wrote; a cgroup's files cannot be removed.
      if (err.code === 'ENOTEMPTY' && !dir.startsWith('/sys/')) {
        await rm(dir, { recursive: true, force: true });
      }
    });
  }
}
