import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { DataSource } from '@slipway/db';
import { RevisionReads } from '@slipway/pipeline';

const BUILD_DIR = /^([0-9a-f-]{36})-a(\d+)$/;

/**
 * Removes build directories (`<dataDir>/builds/<revision>-a<attempt>`) that no build is using:
 * a builder killed mid-build leaves its directory behind. A directory stays while its revision
 * is BUILDING at that attempt, so a live build of another builder sharing the data dir is never
 * touched. Returns the directories removed.
 */
export async function sweepBuildDirectories(dataDir: string, dataSource: DataSource): Promise<string[]> {
  const root = path.join(dataDir, 'builds');
  const entries = await readdir(root).catch(() => [] as string[]);
  const candidates = entries.filter((name) => BUILD_DIR.test(name));
  if (!candidates.length) return [];
  const keep = await liveBuilds(dataSource, candidates);
  const removed: string[] = [];
  for (const name of candidates) {
    if (keep.has(name)) continue;
    await rm(path.join(root, name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}

/** Which of these builds (`<revision>-a<attempt>`) are running: their revision is BUILDING at that attempt. */
export async function liveBuilds(dataSource: DataSource, names: string[]): Promise<Set<string>> {
  const ids = names.flatMap((name) => BUILD_DIR.exec(name)?.[1] ?? []);
  if (!ids.length) return new Set();
  const live = await new RevisionReads(dataSource.manager).building(ids);
  return new Set(live.map((r) => `${r.id}-a${r.attempt}`));
}
