import { stat } from 'node:fs/promises';
import path from 'node:path';

export type PackageManager = 'npm' | 'pnpm' | 'yarn';

/** What a project says about its package manager: package.json's `packageManager` and its lockfile. */
export interface PackageManagerHints {
  packageManager: string | null;
  lockfile: { file: string; manager: PackageManager } | null;
}

const LOCKFILES: ReadonlyArray<[string, PackageManager]> = [
  ['pnpm-lock.yaml', 'pnpm'],
  ['yarn.lock', 'yarn'],
  ['package-lock.json', 'npm'],
  ['npm-shrinkwrap.json', 'npm'],
];

/** The lockfile in `appDir` and the package manager it belongs to, the first found in LOCKFILES' order. */
export async function findLockfile(appDir: string): Promise<{ file: string; manager: PackageManager } | null> {
  for (const [file, manager] of LOCKFILES) {
    if (
      await stat(path.join(appDir, file)).then(
        (s) => s.isFile(),
        () => false,
      )
    )
      return { file, manager };
  }
  return null;
}

/**
 * The package manager of a project: the `packageManager` field of package.json (`pnpm@9.1.0`)
 * wins, then the lockfile present, then npm.
 */
export function packageManagerOf(pkg: PackageManagerHints): { manager: PackageManager; version: string | null } {
  const declared = /^(npm|pnpm|yarn)@(\d+)/.exec(pkg.packageManager ?? '');
  if (declared) return { manager: declared[1] as PackageManager, version: declared[2]! };
  return { manager: pkg.lockfile?.manager ?? 'npm', version: null };
}

/**
 * The install command that respects the project's lockfile: `npm ci`, `pnpm install
 * --frozen-lockfile`, `yarn install --frozen-lockfile` (classic) or `--immutable` (berry);
 * without a lockfile a plain install.
 */
export function lockfileInstallCommand(pkg: PackageManagerHints): string {
  const { manager, version } = packageManagerOf(pkg);
  const locked = pkg.lockfile?.manager === manager;
  switch (manager) {
    case 'pnpm':
      return locked ? 'pnpm install --frozen-lockfile' : 'pnpm install';
    case 'yarn':
      if (!locked) return 'yarn install';
      return version && Number(version) >= 2 ? 'yarn install --immutable' : 'yarn install --frozen-lockfile';
    case 'npm':
      return locked ? 'npm ci --no-audit --no-fund' : 'npm install --no-audit --no-fund';
  }
}

/** How the project's package manager runs one of its scripts (`npm run build`, `pnpm run build`, `yarn run build`). */
export function runScriptCommand(pkg: PackageManagerHints, script: string): string {
  return `${packageManagerOf(pkg).manager} run ${script}`;
}
