import Joi from 'joi';
import { TenancyRepository, type DataSource, type Workspace } from '@slipway/db';
import { defineRoute, ok, type RouteSpec } from '../http/route.js';
import {
  envelope,
  iso,
  listEnvelope,
  paginationQuery,
  timestamp,
  uuid,
  type PaginationQuery,
} from '../schemas/common.schema.js';
import type { QuotaService } from '../services/quota.service.js';

const quotaValue = (max: number) => Joi.number().integer().min(0).max(max).allow(null);
/** Every quota, by its API name; null puts it back to the server's default. */
const quotaFields = {
  deployments: quotaValue(1_000_000).description('Deployments the workspace may have'),
  min_scale: quotaValue(1000).description('Highest min_scale / queue_min_scale a resource_spec may ask for'),
  max_scale: Joi.number()
    .integer()
    .min(1)
    .max(1000)
    .allow(null)
    .description('Highest max_scale / queue_max_scale a resource_spec may ask for'),
  uploads_per_day: quotaValue(1_000_000).description('Upload URLs per rolling 24 hours'),
  upload_bytes: quotaValue(Number.MAX_SAFE_INTEGER).description('Bytes of completed uploads kept stored'),
  log_lines_per_revision: Joi.number()
    .integer()
    .min(1)
    .max(100_000_000)
    .allow(null)
    .description('Log lines kept per revision (oldest trimmed)'),
  log_lines_total: Joi.number()
    .integer()
    .min(1)
    .max(Number.MAX_SAFE_INTEGER)
    .allow(null)
    .description('Log lines kept in the workspace (oldest trimmed)'),
  artifacts_kept: quotaValue(1000).description("Built artifacts kept per deployment besides the active revision's"),
  registry_bytes: quotaValue(Number.MAX_SAFE_INTEGER).description(
    'Bytes of images kept in the built-in registry; a push beyond is refused',
  ),
  trace_retention_days: Joi.number()
    .integer()
    .min(1)
    .max(3650)
    .allow(null)
    .description('Days of traces kept (by run start time); retention removes older ones'),
};
const quotasBody = Joi.object(quotaFields).min(1).required().id('WorkspaceQuotasUpdate');
const quotaNumbers = Joi.object(Object.fromEntries(Object.keys(quotaFields).map((k) => [k, Joi.number().integer()])));
const quotasResponse = Joi.object({
  workspace_id: uuid().required(),
  quotas: quotaNumbers.required().description('The quotas in force'),
  overrides: quotaNumbers
    .required()
    .description("The ones set for this workspace; the others are the server's defaults"),
  usage: Joi.object({
    registry_bytes: Joi.number()
      .integer()
      .required()
      .description('What the registry_bytes quota counts: the two below together'),
    registry_stored_bytes: Joi.number()
      .integer()
      .required()
      .description("Bytes of the workspace's images as the registry stores them (compressed), each blob once"),
    registry_unpacked_bytes: Joi.number()
      .integer()
      .required()
      .description(
        "Bytes the workspace's images unpacked to on the deployer's disk " +
          '(an image refused past SLIPWAY_IMAGE_MAX_UNPACKED_MB: the bytes counted before it was refused)',
      ),
  })
    .required()
    .description('What the workspace uses of the quotas that count bytes'),
}).id('WorkspaceQuotas');
const workspaceParams = Joi.object({ workspace_id: uuid().required() });

const workspaceResponse = Joi.object({
  id: uuid().required(),
  name: Joi.string().required(),
  created_at: timestamp().required(),
}).id('Workspace');

const present = (w: Workspace) => ({ id: w.id, name: w.name, created_at: iso(w.createdAt)! });

/**
 * `GET /v2/workspaces` (extra): the workspaces a credential may act in, so an organization-scoped
 * key can pick the `X-Tenant-Id` to send (the console's sign-in does). A workspace-scoped
 * credential sees its own workspace only.
 */
export function workspaceRoutes(dataSource: DataSource, quotas: QuotaService): RouteSpec[] {
  return [
    defineRoute<{ workspace_id: string }>({
      method: 'get',
      path: '/v2/workspaces/:workspace_id/quotas',
      operationId: 'getWorkspaceQuotas',
      summary: "A workspace's quotas: those in force and which it overrides (docs/operations.md, Quotas and retention)",
      tag: 'Workspaces',
      auth: 'organization',
      request: { params: workspaceParams },
      responses: {
        200: { description: 'The quotas', schema: quotasResponse },
        404: { description: 'No such workspace for this credential' },
      },
      handler: async (ctx) => {
        const principal = ctx.principal!;
        const own = principal.scope === 'organization' ? null : principal.workspaceId;
        return ok(await quotas.view(principal.organizationId, ctx.params.workspace_id, own));
      },
    }),
    defineRoute<{ workspace_id: string }, {}, Record<string, number | null>>({
      method: 'put',
      path: '/v2/workspaces/:workspace_id/quotas',
      operationId: 'updateWorkspaceQuotas',
      summary: "Override a workspace's quotas (organization admin); null puts one back to the default",
      tag: 'Workspaces',
      auth: 'organization',
      admin: 'organization',
      request: { params: workspaceParams, body: quotasBody },
      responses: {
        200: { description: 'The quotas now', schema: quotasResponse },
        404: { description: 'No such workspace in this organization' },
      },
      handler: async (ctx) => ok(await quotas.update(ctx.principal!.organizationId, ctx.params.workspace_id, ctx.body)),
    }),
    defineRoute<{}, PaginationQuery>({
      method: 'get',
      path: '/v2/workspaces',
      operationId: 'listWorkspaces',
      summary: 'Workspaces this credential may act in (all of the organization for an organization-scoped key)',
      tag: 'Workspaces',
      auth: 'organization',
      request: { query: Joi.object(paginationQuery) },
      responses: {
        200: {
          description: 'A page of workspaces, oldest first',
          schema: listEnvelope(workspaceResponse, 'WorkspaceList'),
        },
      },
      handler: async (ctx) => {
        const principal = ctx.principal!;
        const tenancy = new TenancyRepository(dataSource.manager);
        if (principal.scope === 'organization') {
          return ok(
            envelope((await tenancy.listWorkspaces(principal.organizationId, ctx.query)).map(present), ctx.query),
          );
        }
        const own =
          ctx.query.offset === 0 && principal.workspaceId ? await tenancy.findWorkspace(principal.workspaceId) : null;
        return ok(envelope(own ? [present(own)] : [], ctx.query));
      },
    }),
  ];
}
