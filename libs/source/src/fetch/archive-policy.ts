import path from 'node:path';
import { Parser } from 'tar';

/** What the policy reads of a tar entry header (node-tar's `ReadEntry` has these). */
export interface ArchiveEntryHeader {
  path: string;
  type: string;
  linkpath?: string;
  size?: number;
}

/** Entry types a source tree may hold; devices, FIFOs and anything unknown are refused. */
const ALLOWED_TYPES = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory', 'GNUDumpDir', 'SymbolicLink', 'Link']);
const TYPE_NAMES: Record<string, string> = {
  CharacterDevice: 'a character device',
  BlockDevice: 'a block device',
  FIFO: 'a FIFO',
};
/** As the kernel's ELOOP limit: a longer chain of symlinks is a loop. */
const MAX_LINK_HOPS = 40;
const SHOWN_PROBLEMS = 5;

type Node = { kind: 'dir' } | { kind: 'file' } | { kind: 'symlink'; target: string };
const ESCAPES = Symbol('escapes');

const components = (p: string) => p.split(/[\\/]+/).filter((c) => c !== '' && c !== '.');
const isAbsoluteName = (p: string) => p.startsWith('/') || p.startsWith('\\') || /^[A-Za-z]:/.test(p);

/**
 * The rules a source archive must follow before a byte of it is written, checked entry by entry
 * against a model of the tree the archive builds (the extraction target starts empty, so the
 * archive alone decides what every path is). Symlinks are resolved through the symlinks the
 * archive itself made, as the kernel would resolve them, not lexically: `up -> .` then
 * `esc -> up/..` is caught. Refused: absolute names and `..` components, devices and FIFOs,
 * entries written through a symlink, symlinks that resolve outside the tree (re-checked once the
 * whole archive is read, since a later entry can change where an earlier link leads), hard links
 * to anything but a file of the archive, and archives whose members add up past `maxBytes`.
 *
 * Used on the api's upload (before the tarball is accepted) and in the builder (before and
 * during extraction).
 */
export class ArchivePolicy {
  readonly problems: string[] = [];
  entries = 0;
  bytes = 0;
  private readonly nodes = new Map<string, Node>();

  constructor(private readonly maxBytes = Number.POSITIVE_INFINITY) {}

  /** True when the entry may be extracted; otherwise the reason is added to `problems`. */
  admit(entry: ArchiveEntryHeader): boolean {
    this.entries += 1;
    this.bytes += entry.size ?? 0;
    const problem = this.overLimit() ? null : this.check(entry);
    if (problem) this.problems.push(problem);
    return problem === null && !this.overLimit();
  }

  /** The members declared more bytes than allowed (a tar header cannot lie about what follows it). */
  overLimit(): boolean {
    return this.bytes > this.maxBytes;
  }

  /**
   * Every problem once the whole archive has been seen, including symlinks a later entry turned
   * into an escape. Empty means the archive is acceptable.
   */
  finish(): string[] {
    const problems = [...this.problems];
    if (this.overLimit()) problems.unshift(`it expands to more than ${Math.round(this.maxBytes / 1024 ** 2)} MB`);
    for (const [at, node] of this.nodes) {
      if (node.kind !== 'symlink') continue;
      const message = symlinkOutside(at, node.target);
      if (
        !problems.includes(message) &&
        this.resolve([...components(at).slice(0, -1), ...components(node.target)]) === ESCAPES
      )
        problems.push(message);
    }
    return problems;
  }

  /** `problems` as one sentence for a user, or null when there are none. */
  static describe(problems: readonly string[]): string | null {
    if (!problems.length) return null;
    return (
      `The source tarball was ` +
      `refused: ${problems.slice(0, SHOWN_PROBLEMS).join('; ')}${problems.length > SHOWN_PROBLEMS ? '; …' : ''}.`
    );
  }

  private check(entry: ArchiveEntryHeader): string | null {
    const name = String(entry.path);
    if (!ALLOWED_TYPES.has(entry.type)) {
      return `'${name}' is ${TYPE_NAMES[entry.type] ?? `an entry of type ${entry.type}`}; only files, directories and links are allowed`;
    }
    if (isAbsoluteName(name) || name.split(/[\\/]+/).includes('..')) return `'${name}' points outside its directory`;
    const parts = components(name);
    if (!parts.length) return entry.type === 'Directory' ? null : `'${name}' would replace the extraction directory`;
    const throughLink = parts
      .slice(0, -1)
      .findIndex((_, i) => this.nodes.get(parts.slice(0, i + 1).join('/'))?.kind === 'symlink');
    if (throughLink >= 0)
      return `'${name}' is written through the symlink '${parts.slice(0, throughLink + 1).join('/')}'`;
    const at = parts.join('/');

    if (entry.type === 'SymbolicLink') {
      const target = String(entry.linkpath ?? '');
      if (isAbsoluteName(target) || this.resolve([...parts.slice(0, -1), ...components(target)]) === ESCAPES)
        return symlinkOutside(at, target);
      this.nodes.set(at, { kind: 'symlink', target });
    } else if (entry.type === 'Link') {
      const target = String(entry.linkpath ?? '');
      const targetParts = components(target);
      const viaLink = targetParts.some(
        (_, i) => this.nodes.get(targetParts.slice(0, i + 1).join('/'))?.kind === 'symlink',
      );
      if (
        isAbsoluteName(target) ||
        target.split(/[\\/]+/).includes('..') ||
        viaLink ||
        this.nodes.get(targetParts.join('/'))?.kind !== 'file'
      ) {
        return `hard link '${at}' does not point to a file of the archive (${target})`;
      }
      this.nodes.set(at, { kind: 'file' });
    } else {
      this.nodes.set(at, { kind: entry.type === 'Directory' || entry.type === 'GNUDumpDir' ? 'dir' : 'file' });
    }
    return null;
  }

  /** Where `parts` (from the root) leads, following the archive's symlinks; ESCAPES if above the root or looping. */
  private resolve(parts: readonly string[], hops = { count: 0 }): string[] | typeof ESCAPES {
    let out: string[] = [];
    for (const part of parts) {
      if (part === '..') {
        if (!out.length) return ESCAPES;
        out.pop();
        continue;
      }
      const node = this.nodes.get([...out, part].join('/'));
      if (node?.kind !== 'symlink') {
        out.push(part);
        continue;
      }
      hops.count += 1;
      if (hops.count > MAX_LINK_HOPS || isAbsoluteName(node.target)) return ESCAPES;
      const next = this.resolve([...out, ...components(node.target)], hops);
      if (next === ESCAPES) return ESCAPES;
      out = next;
    }
    return out;
  }
}

const symlinkOutside = (at: string, target: string) => `symlink '${at}' points outside the archive (${target})`;

/** True when `candidate` is `root` or below it. */
export function isInside(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/**
 * Checks an archive while its bytes stream past (the api's upload): each chunk goes to `write`,
 * and `end` answers why the archive is refused, or null when it is acceptable. Only headers are
 * looked at; file contents are skipped.
 */
export function inspectArchiveStream(maxBytes: number): { write(chunk: Buffer): void; end(): Promise<string | null> } {
  const policy = new ArchivePolicy(maxBytes);
  let broken: string | null = null;
  const parser = new Parser({
    strict: true,
    // maxBytes (declared sizes) is the limit; a ratio alone refuses honest sparse files.
    maxDecompressionRatio: Number.POSITIVE_INFINITY,
    onReadEntry: (entry) => {
      policy.admit(entry);
      entry.resume();
    },
  });
  const finished = new Promise<void>((resolve) => {
    parser.on('error', (err: Error) => {
      broken ??= `The source tarball is not a valid .tar.gz archive (${err.message.split('\n')[0]}).`;
      resolve();
    });
    parser.on('end', () => resolve());
    parser.on('close', () => resolve());
  });
  const stopped = () => broken !== null || policy.overLimit();
  return {
    write(chunk) {
      if (!stopped()) parser.write(chunk);
    },
    async end() {
      if (!stopped()) {
        parser.end();
        await finished;
      }
      return broken ?? ArchivePolicy.describe(policy.finish());
    },
  };
}
