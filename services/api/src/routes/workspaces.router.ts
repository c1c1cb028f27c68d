import Joi from 'joi';
import { TenancyRepository, type DataSource, type Workspace } from '@slipway/db';
import { defineRoute, ok, type RouteSpec } from '../http/route.js';
import { envelope, iso, listEnvelope, paginationQuery, timestamp, uuid, type PaginationQuery } from '../schemas/common.schema.js';

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
export function workspaceRoutes(dataSource: DataSource): RouteSpec[] {
  return [
    defineRoute<{}, PaginationQuery>({
      method: 'get',
      path: '/v2/workspaces',
      operationId: 'listWorkspaces',
      summary: 'Workspaces this credential may act in (all of the organization for an organization-scoped key)',
      tag: 'Workspaces',
      auth: 'organization',
      request: { query: Joi.object(paginationQuery) },
      responses: { 200: { description: 'A page of workspaces, oldest first', schema: listEnvelope(workspaceResponse, 'WorkspaceList') } },
      handler: async (ctx) => {
        const principal = ctx.principal!;
        const tenancy = new TenancyRepository(dataSource.manager);
        if (principal.scope === 'organization') {
          return ok(envelope((await tenancy.listWorkspaces(principal.organizationId, ctx.query)).map(present), ctx.query));
        }
        const own = ctx.query.offset === 0 && principal.workspaceId ? await tenancy.findWorkspace(principal.workspaceId) : null;
        return ok(envelope(own ? [present(own)] : [], ctx.query));
      },
    }),
  ];
}
