/**
 * `pnpm slipway <command>`: operator commands that work straight on the database.
 *
 *   migrate [--create-database]         apply pending migrations
 *   keys create [--role admin|member] [--org] [--workspace <id>] [--listener <id>] [--description <text>]
 *   keys list [--workspace <id>]
 *   keys revoke <key id>
 *   registry-config                     write the built-in registry's configuration (docker-compose's registry:2)
 *   registry gc [--grace-hours <n>] [--dry-run]
 *                                       delete images no revision uses, sweep their blobs (registry-gc.ts)
 *   registry-guard                      the registry's push guard alone, on the registry's address, in
 *                                       front of distribution at SLIPWAY_REGISTRY_UPSTREAM_URL (compose, Kubernetes)
 *   preview create|list|delete          a deployment's previews through the api (SLIPWAY_URL, SLIPWAY_API_KEY; preview.ts)
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, platformCredentials } from '@slipway/config';
import { createLogger } from '@slipway/logging';
import { secretsCodec } from '@slipway/crypto';
import { prepareRegistry, requestSweep, startGuardOnly } from '@slipway/registry';
import { preview, PreviewUsageError } from './preview.js';
import { collectRegistryGarbage } from './registry-gc.js';
import {
  ApiKeyRepository,
  createDataSource,
  ensureDatabase,
  fillSecretNames,
  issueApiKey,
  ListenerRepository,
  runMigrations,
  TenancyRepository,
  Workspace,
  type DataSource,
} from '@slipway/db';

const USAGE = `usage:
  slipway migrate [--create-database]
  slipway keys create [--role admin|member] [--org] [--workspace <id>] [--listener <id>] [--description <text>]
  slipway keys list [--workspace <id>]
  slipway keys revoke <key-id>
  slipway registry-config
  slipway registry gc [--grace-hours <n>] [--dry-run]
  slipway registry-guard
  slipway preview create <deployment> --ref <branch> [--number <n>] [--wait]
  slipway preview list <deployment>
  slipway preview delete <deployment> <number>`;

class UsageError extends Error {}

async function withDataSource<T>(fn: (ds: DataSource) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const ds = createDataSource({ url: config.databaseUrl, applicationName: 'slipway-cli', poolSize: 2 });
  await ds.initialize();
  try {
    return await fn(ds);
  } finally {
    await ds.destroy();
  }
}

async function migrate(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { 'create-database': { type: 'boolean', default: false } } });
  const config = loadConfig();
  if (values['create-database'] && (await ensureDatabase(config.databaseUrl))) {
    console.log(`created database ${new URL(config.databaseUrl).pathname.slice(1)}`);
  }
  const applied = await withDataSource(runMigrations);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
  const secrets = secretsCodec(config);
  const namesOf = (sealed: string, id: string) => secrets.openSecrets(sealed, id).map((s) => s.name);
  const filled = await withDataSource((ds) => fillSecretNames(ds, namesOf));
  if (filled) console.log(`recorded the secret names of ${filled} deployments`);
}

/** The workspace to act in: the one named, else the bootstrap organization's first. */
async function resolveWorkspace(ds: DataSource, id: string | undefined): Promise<Workspace> {
  if (id) {
    const workspace = await new TenancyRepository(ds.manager).findWorkspace(id);
    if (!workspace) throw new UsageError(`workspace ${id} not found`);
    return workspace;
  }
  const [workspace] = await ds.manager.find(Workspace, { order: { createdAt: 'ASC', id: 'ASC' }, take: 1 });
  if (!workspace) throw new UsageError('no workspace yet: start the api once to bootstrap');
  return workspace;
}

async function keys(args: string[]): Promise<void> {
  const [action, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      role: { type: 'string', default: 'member' },
      org: { type: 'boolean', default: false },
      workspace: { type: 'string' },
      listener: { type: 'string' },
      description: { type: 'string', default: '' },
      json: { type: 'boolean', default: false },
    },
  });
  await withDataSource(async (ds) => {
    const workspace = await resolveWorkspace(ds, values.workspace);
    switch (action) {
      case 'create': {
        if (values.role !== 'admin' && values.role !== 'member') throw new UsageError('--role must be admin or member');
        if (values.org && values.listener) throw new UsageError('--listener keys are workspace-scoped; drop --org');
        if (values.listener && !(await new ListenerRepository(ds.manager).find(workspace.id, values.listener))) {
          throw new UsageError(`listener ${values.listener} not found in workspace ${workspace.id}`);
        }
        const { row, key } = await issueApiKey(ds.manager, {
          organizationId: workspace.organizationId,
          workspaceId: values.org ? null : workspace.id,
          listenerId: values.listener ?? null,
          scope: values.org ? 'organization' : 'workspace',
          role: values.listener ? 'member' : values.role,
          description: values.description,
        });
        if (values.json) console.log(JSON.stringify({ id: row.id, key, scope: row.scope, role: row.role }));
        else
          console.log(
            `created ${row.scope} ${row.role} key ${row.id}\n\n  ${key}\n\nStore it now: it is not shown again.`,
          );
        return;
      }
      case 'list': {
        const rows = await new ApiKeyRepository(ds.manager).list({
          organizationId: workspace.organizationId,
          workspaceId: values.workspace ? workspace.id : null,
        });
        if (values.json) {
          console.log(JSON.stringify(rows.map(({ keyHash: _omit, ...r }) => r)));
          return;
        }
        for (const r of rows) {
          console.log(
            [r.id, r.prefix + '…', r.scope, r.role, r.workspaceId ?? '-', r.listenerId ?? '-', r.description].join(
              '\t',
            ),
          );
        }
        return;
      }
      case 'revoke': {
        const [id] = positionals;
        if (!id || !/^[0-9a-f-]{36}$/i.test(id)) throw new UsageError('keys revoke needs a key id (a UUID)');
        if (!(await new ApiKeyRepository(ds.manager).revoke(id))) throw new UsageError(`no active key ${id}`);
        console.log(`revoked ${id}`);
        return;
      }
      default:
        throw new UsageError(USAGE);
    }
  });
}

async function registry(args: string[]): Promise<void> {
  const [action, ...rest] = args;
  if (action !== 'gc') throw new UsageError(USAGE);
  const { values } = parseArgs({
    args: rest,
    options: { 'grace-hours': { type: 'string', default: '24' }, 'dry-run': { type: 'boolean', default: false } },
  });
  const graceHours = Number(values['grace-hours']);
  if (!Number.isFinite(graceHours) || graceHours < 0)
    throw new UsageError('--grace-hours must be a number of hours, 0 or more');
  const config = loadConfig();
  const report = await withDataSource((dataSource) =>
    collectRegistryGarbage({
      dataSource,
      config,
      graceMs: graceHours * 3_600_000,
      dryRun: values['dry-run'],
      sweep: () => requestSweep(config),
    }),
  );
  for (const ref of report.deleted) console.log(`${values['dry-run'] ? 'would delete' : 'deleted'} ${ref}`);
  console.log(
    `${report.deleted.length} manifest(s) ${values['dry-run'] ? 'to delete' : 'deleted'}, ${report.kept} kept`,
  );
  if (values['dry-run']) return;
  console.log(
    report.postponed ??
      `swept: ${report.freedBytes} bytes freed; ${report.uncounted} blob(s) no longer counted against registry_bytes`,
  );
}

/** Runs until SIGTERM/SIGINT: the push guard on the registry's address, distribution behind it (push-guard.ts). */
async function registryGuard(): Promise<void> {
  const config = loadConfig();
  const log = createLogger({ name: 'registry-guard', level: config.logLevel, secrets: platformCredentials(config) });
  const say = (msg: string) => log.info(msg);
  const guard = await startGuardOnly(config, { log: say });
  say(
    `push guard listening on ${config.registry.host}:${config.registry.port}, in front of distribution at ${guard.upstreamUrl}`,
  );
  await new Promise<void>((resolve) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolve());
  });
  await guard.close();
}

async function main(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  switch (command) {
    case 'migrate':
      return migrate(args);
    case 'keys':
      return keys(args);
    case 'registry':
      return registry(args);
    case 'registry-guard':
      return registryGuard();
    case 'preview':
      return preview(args);
    case 'registry-config':
      // The signing key (created on first use), its certificate and distribution's config, under the storage dir.
      console.log(prepareRegistry(loadConfig()));
      return;
    default:
      throw new UsageError(USAGE);
  }
}

main(process.argv.slice(2)).catch((err) => {
  if (err instanceof UsageError || err instanceof ConfigError || err instanceof PreviewUsageError) {
    console.error(err.message);
    process.exit(2);
  }
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
