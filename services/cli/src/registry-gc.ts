import type { Config } from '@slipway/config';
import { RegistryRepository, type DataSource } from '@slipway/db';
import { RevisionReads } from '@slipway/pipeline';
import {
  deploymentOfRepository,
  loadOrCreateSigningKey,
  manifestBlobs,
  RegistryClient,
  storedBlobs,
  storedManifests,
  type StoredManifest,
} from '@slipway/registry';

export interface RegistryGcOptions {
  dataSource: DataSource;
  config: Pick<Config, 'registry' | 'secretsKey'>;
  /** A manifest pushed more recently than this is kept even if no revision runs it (yet). */
  graceMs: number;
  /** Runs distribution's sweep with nothing being pushed (sweep.ts); false when it failed. */
  sweep: () => Promise<{ ok: boolean; output: string }>;
  /** Only say what would be deleted. */
  dryRun?: boolean;
  now?: Date;
}

export interface RegistryGcReport {
  /** `repository@digest` of each manifest deleted (or, dry, that would be). */
  deleted: string[];
  kept: number;
  /** Why the sweep did not run, when it did not. */
  postponed: string | null;
  sweepOutput: string;
  freedBytes: number;
  /** Rows the `registry_bytes` quota no longer counts. */
  uncounted: number;
}

/**
 * Garbage collection of the built-in registry (docs/operations.md, The image registry):
 *
 * 1. Mark, online, through the registry API: a manifest is deleted unless its deployment still
 *    exists and either some revision of it runs (or may be redeployed to) that digest, or it was
 *    pushed within the grace period (a push not PATCHed yet). Repositories of deleted
 *    deployments lose every manifest.
 * 2. Sweep: distribution's `garbage-collect` with the registry read-only. Postponed while a push
 *    seems under way (a blob counted within the grace period that no manifest names yet): the
 *    sweep would delete its layers before its manifest arrives.
 * 3. The `registry_bytes` quota stops counting blobs no remaining manifest of their repository names.
 */
export async function collectRegistryGarbage(options: RegistryGcOptions): Promise<RegistryGcReport> {
  const { config, dataSource } = options;
  const storageDir = config.registry.storageDir;
  const now = options.now ?? new Date();
  const recent = (at: Date) => now.getTime() - at.getTime() < options.graceMs;
  const repo = new RegistryRepository(dataSource.manager);
  const revisions = new RevisionReads(dataSource.manager);
  const wanted = await revisions.imageDigestsByDeployment();
  const manifests = await storedManifests(storageDir);
  const keep = (m: StoredManifest) => {
    const deploymentId = deploymentOfRepository(m.repository);
    // Not a deployment's repository: nothing Slipway pushed; left alone.
    if (!deploymentId) return true;
    const digests = wanted.get(deploymentId);
    return !!digests && (digests.has(m.digest) || recent(m.pushedAt));
  };
  const doomed = manifests.filter((m) => !keep(m));
  const report: RegistryGcReport = {
    deleted: doomed.map((m) => `${m.repository}@${m.digest}`),
    kept: manifests.length - doomed.length,
    postponed: null,
    sweepOutput: '',
    freedBytes: 0,
    uncounted: 0,
  };
  if (options.dryRun) return report;

  const named = await referencedBlobs(storageDir, manifests);
  const counted = await repo.countedBlobs();
  const inFlight = counted.filter((b) => recent(b.createdAt) && !named.get(b.repository)?.has(b.digest));
  const client = new RegistryClient(
    config.registry.internalUrl,
    loadOrCreateSigningKey(config.registry.signingKeyFile),
  );
  for (const m of doomed) {
    // A PATCH since the first read may have made a revision of it: asked again just before.
    const deploymentId = deploymentOfRepository(m.repository)!;
    if (wanted.has(deploymentId) && (await revisions.deploymentUsesImage(deploymentId, m.digest))) {
      report.deleted = report.deleted.filter((ref) => ref !== `${m.repository}@${m.digest}`);
      report.kept++;
      continue;
    }
    await client.deleteManifest(m.repository, m.digest);
  }

  if (inFlight.length) {
    report.postponed =
      `${inFlight.length} blob(s) pushed within the grace period are not named by any manifest ` +
      `yet (a push under way); the sweep waits for the next run.`;
  } else {
    const before = await storedBlobs(storageDir);
    const swept = await options.sweep();
    report.sweepOutput = swept.output;
    if (!swept.ok) throw new Error(swept.output);
    const after = await storedBlobs(storageDir);
    for (const [digest, size] of before) if (!after.has(digest)) report.freedBytes += size;
  }
  const remaining = await referencedBlobs(storageDir, await storedManifests(storageDir));
  const keepInFlight = new Set(inFlight.map((b) => `${b.repository}@${b.digest}`));
  const gone = counted.filter(
    (b) => !remaining.get(b.repository)?.has(b.digest) && !keepInFlight.has(`${b.repository}@${b.digest}`),
  );
  report.uncounted = await repo.forgetBlobs(gone);
  return report;
}

/** Per repository, every blob its manifests name (their own digests included). */
async function referencedBlobs(
  storageDir: string,
  manifests: readonly StoredManifest[],
): Promise<Map<string, Set<string>>> {
  const byRepository = new Map<string, Set<string>>();
  for (const m of manifests) {
    const set = byRepository.get(m.repository) ?? new Set<string>();
    await manifestBlobs(storageDir, m.digest, set);
    byRepository.set(m.repository, set);
  }
  return byRepository;
}
