import { randomUUID } from 'node:crypto';
import {
  isForeignKeyViolation,
  isUniqueViolation,
  Listener,
  LISTENER_COMPUTE_ID_UNIQUE,
  ListenerRepository,
  type ComputeConfig,
  type DataSource,
  type ListenerChanges,
  type Page,
} from '@slipway/db';
import { BadRequestError, ConflictError, NotFoundError } from '@slipway/domain';
import { iso } from '../schemas/common.schema.js';
import type { ComputeConfigBody, CreateListenerBody, PatchListenerBody } from '../schemas/listener.schema.js';

/** The API shape of a listener. */
export function presentListener(l: Listener) {
  return {
    id: l.id,
    tenant_id: l.workspaceId,
    compute_type: l.computeType,
    compute_id: l.computeId,
    compute_config: {
      k8s_namespaces: l.computeConfig.k8s_namespaces ?? null,
      pod_policy: l.computeConfig.pod_policy ?? null,
    },
    version: l.version,
    last_seen_at: iso(l.lastSeenAt),
    created_at: iso(l.createdAt)!,
    updated_at: iso(l.updatedAt)!,
  };
}

export type ListenerView = ReturnType<typeof presentListener>;

const duplicate = (workspaceId: string, computeId: string) =>
  new ConflictError(`Listener for workspace ID '${workspaceId}' and compute ID '${computeId}' already exists.`);

/** Listener registration (docs/api.md, Listeners). Every call is confined to one workspace. */
export class ListenerService {
  constructor(private readonly dataSource: DataSource) {}

  private repo(): ListenerRepository {
    return new ListenerRepository(this.dataSource.manager);
  }

  async create(workspaceId: string, body: CreateListenerBody): Promise<ListenerView> {
    const listener = Object.assign(new Listener(), {
      id: randomUUID(),
      workspaceId,
      computeType: body.compute_type,
      computeId: body.compute_id,
      computeConfig: storedComputeConfig(body.compute_config),
      version: body.version ?? null,
      lastSeenAt: null,
    });
    try {
      return presentListener(await this.repo().insert(listener));
    } catch (err) {
      // The unique index decides races: of two concurrent creates exactly one gets here.
      if (isUniqueViolation(err, LISTENER_COMPUTE_ID_UNIQUE)) throw duplicate(workspaceId, body.compute_id);
      throw err;
    }
  }

  async get(workspaceId: string, id: string): Promise<ListenerView> {
    return presentListener(await this.load(workspaceId, id));
  }

  async list(workspaceId: string, page: Page): Promise<ListenerView[]> {
    return (await this.repo().list(workspaceId, page)).map(presentListener);
  }

  /** PATCH: `compute_config` and/or `version`; identity fields may be repeated but not changed. */
  async patch(workspaceId: string, id: string, body: PatchListenerBody): Promise<ListenerView> {
    const current = await this.load(workspaceId, id);
    assertUnchanged(current, body);
    const changes: ListenerChanges = {};
    if (body.compute_config !== undefined) changes.computeConfig = storedComputeConfig(body.compute_config);
    if (body.version !== undefined) changes.version = body.version;
    if (!Object.keys(changes).length) return presentListener(current);
    return this.update(workspaceId, id, changes);
  }

  /** PUT: the whole body; `compute_config` and `version` replace what is stored. */
  async replace(workspaceId: string, id: string, body: CreateListenerBody): Promise<ListenerView> {
    const current = await this.load(workspaceId, id);
    assertUnchanged(current, body);
    return this.update(workspaceId, id, {
      computeConfig: storedComputeConfig(body.compute_config),
      version: body.version ?? null,
    });
  }

  async delete(workspaceId: string, id: string): Promise<void> {
    try {
      if (!(await this.repo().delete(workspaceId, id))) throw NotFoundError.of('Listener', id);
    } catch (err) {
      // deployments.listener_id is ON DELETE RESTRICT: Postgres itself refuses while any use it.
      if (isForeignKeyViolation(err)) {
        throw new BadRequestError(`Listener ID ${id} is still used by deployments; delete them first.`);
      }
      throw err;
    }
  }

  private async update(workspaceId: string, id: string, changes: ListenerChanges): Promise<ListenerView> {
    const updated = await this.repo().update(workspaceId, id, changes);
    if (!updated) throw NotFoundError.of('Listener', id); // deleted between load and update
    return presentListener(updated);
  }

  private async load(workspaceId: string, id: string): Promise<Listener> {
    const listener = await this.repo().find(workspaceId, id);
    if (!listener) throw NotFoundError.of('Listener', id);
    return listener;
  }
}

/** compute_config replaces the stored one as a whole: an absent pod_policy is none (docs/api.md, Listeners). */
function storedComputeConfig(config: ComputeConfigBody): ComputeConfig {
  return { k8s_namespaces: config.k8s_namespaces ?? null, pod_policy: config.pod_policy ?? null };
}

function assertUnchanged(current: Listener, body: PatchListenerBody): void {
  if (body.compute_type !== undefined && body.compute_type !== current.computeType) {
    throw new BadRequestError(`compute_type cannot be changed after creation (it is '${current.computeType}').`);
  }
  if (body.compute_id !== undefined && body.compute_id !== current.computeId) {
    throw new BadRequestError(`compute_id cannot be changed after creation (it is '${current.computeId}').`);
  }
}
