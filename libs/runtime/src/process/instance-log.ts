import { open } from 'node:fs/promises';

/** How each start of an instance begins in its log file (the rest of the line names it). */
export const START_HEADER = '--- slipway: starting';

/** The last `count` lines of a file (reads at most its last 64 KiB). */
export async function lastLines(file: string, count: number): Promise<string[]> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch {
    return [];
  }
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, 64 * 1024);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    const lines = buffer
      .toString('utf8')
      .split(/\r?\n/)
      .filter((l) => l.trim().length);
    return lines.slice(-count);
  } finally {
    await handle.close();
  }
}

/** The lines after the last start header of an instance's log file: what its latest start printed. */
export async function linesSinceLastStart(file: string, count = 30): Promise<string[]> {
  const lines = await lastLines(file, count);
  return lines.slice(lines.findLastIndex((l) => l.startsWith(START_HEADER)) + 1);
}
