// `npm test` / `pnpm test`: every test, on a fresh machine too. Installs what is missing,
// makes sure Postgres/Redis answer (unless DATABASE_URL/REDIS_URL point elsewhere), type-checks,
// then runs vitest. Extra arguments go to vitest (`npm test -- test/integration/listeners.test.ts`).
import {
  ensureDependencies,
  ensurePnpm,
  ensureLocalNames,
  ensureRegistryTools,
  ensureSandboxTools,
  ensureServices,
  log,
  run,
} from './bootstrap.mjs';
import { ensureConsole } from './console.mjs';

ensurePnpm();
ensureDependencies();
await ensureServices();
ensureSandboxTools();
ensureLocalNames();
ensureRegistryTools();
ensureConsole();
log('checking formatting (pnpm format to fix)');
run('pnpm', ['exec', 'biome', 'format', '.']);
log('type-checking');
run('pnpm', ['exec', 'tsc', '--noEmit', '-p', 'tsconfig.json']);
try {
  run('pnpm', ['exec', 'vitest', 'run', ...process.argv.slice(2)]);
} catch (err) {
  log(err.message);
  process.exit(1);
}
