import {
  created,
  defineRoute,
  noContent,
  ok,
  workspaceOf,
  type RequestContext,
  type RouteSpec,
} from '../http/route.js';
import { deploymentParams } from '../schemas/deployment.schema.js';
import {
  addDomainBody,
  domainList,
  domainParams,
  domainResponse,
  removeDomainQuery,
  type AddDomainBody,
} from '../schemas/domain.schema.js';
import type { DomainService } from '../services/domain.service.js';

type DeploymentParams = { deployment_id: string };
type DomainParams = DeploymentParams & { host: string };

const tag = 'Domains';
const notFound = { description: 'Deployment (or domain) not found in this workspace' };

/** A deployment's custom domains (docs/api.md, Domains): routed by the edge once verified. */
export function domainRoutes(domains: DomainService): RouteSpec[] {
  const remove = (ctx: RequestContext<DeploymentParams, any, any>, host: string) =>
    domains.remove(workspaceOf(ctx), ctx.params.deployment_id, host);
  return [
    defineRoute<DeploymentParams>({
      method: 'get',
      path: '/v2/deployments/:deployment_id/domains',
      operationId: 'listDeploymentDomains',
      summary: "A deployment's custom domains with their states",
      tag,
      auth: 'workspace',
      request: { params: deploymentParams },
      responses: { 200: { description: 'Every custom domain of the deployment', schema: domainList }, 404: notFound },
      handler: async (ctx) => {
        const all = await domains.list(workspaceOf(ctx), ctx.params.deployment_id);
        return ok({ resources: all, offset: all.length });
      },
    }),
    defineRoute<DeploymentParams, {}, AddDomainBody>({
      method: 'post',
      path: '/v2/deployments/:deployment_id/domains',
      operationId: 'addDeploymentDomain',
      summary: 'Claim a host for the deployment (routed once verified; never starts a rollout)',
      tag,
      auth: 'workspace',
      request: { params: deploymentParams, body: addDomainBody },
      responses: {
        201: { description: 'Claimed', schema: domainResponse },
        200: { description: 'The deployment held the host already', schema: domainResponse },
        400: { description: 'Not a domain name' },
        404: notFound,
        409: { description: 'Another deployment holds the host, or the deployment is being deleted' },
        422: {
          description: "A reserved host (the apps domain's, localhost, the api's), or a deployment on a listener",
        },
      },
      handler: async (ctx) => {
        const { domain, created: isNew } = await domains.add(workspaceOf(ctx), ctx.params.deployment_id, ctx.body.host);
        return isNew ? created(domain) : ok(domain);
      },
    }),
    defineRoute<DomainParams>({
      method: 'delete',
      path: '/v2/deployments/:deployment_id/domains/:host',
      operationId: 'removeDeploymentDomain',
      summary: 'Release a host of the deployment (never starts a rollout)',
      tag,
      auth: 'workspace',
      request: { params: domainParams },
      responses: {
        204: { description: 'Released' },
        404: notFound,
        409: { description: 'The deployment is being deleted' },
      },
      handler: async (ctx) => {
        await remove(ctx, ctx.params.host);
        return noContent();
      },
    }),
    defineRoute<DeploymentParams, { host: string }>({
      method: 'delete',
      path: '/v2/deployments/:deployment_id/domains',
      operationId: 'removeDeploymentDomainByQuery',
      summary: 'Release a host of the deployment, named by `?host=`',
      tag,
      auth: 'workspace',
      request: { params: deploymentParams, query: removeDomainQuery },
      responses: {
        204: { description: 'Released' },
        404: notFound,
        409: { description: 'The deployment is being deleted' },
      },
      handler: async (ctx) => {
        await remove(ctx, ctx.query.host);
        return noContent();
      },
    }),
  ];
}
