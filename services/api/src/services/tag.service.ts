import { randomUUID } from 'node:crypto';
import {
  DeploymentRepository,
  isForeignKeyViolation,
  isUniqueViolation,
  TAG_KEY_UNIQUE,
  TAG_VALUE_UNIQUE,
  TagKey,
  TagRepository,
  TagValue,
  type DataSource,
  type DeploymentTag,
  type Page,
  type TagKeyChanges,
} from '@slipway/db';
import { BadRequestError, ConflictError, NotFoundError } from '@slipway/domain';
import { iso } from '../schemas/common.schema.js';
import type { CreateTagKeyBody, CreateTagValueBody, PatchTagKeyBody } from '../schemas/tag.schema.js';
import type { DeploymentService } from './deployment.service.js';

/** The API shape of a tag key. */
export function presentTagKey(k: TagKey) {
  return {
    id: k.id,
    tenant_id: k.workspaceId,
    key: k.key,
    description: k.description,
    created_at: iso(k.createdAt)!,
    updated_at: iso(k.updatedAt)!,
  };
}

/** The API shape of a tag value. */
export function presentTagValue(v: TagValue) {
  return {
    id: v.id,
    tag_key_id: v.tagKeyId,
    value: v.value,
    created_at: iso(v.createdAt)!,
    updated_at: iso(v.updatedAt)!,
  };
}

/** One tag a deployment carries: the value with its key. */
export function presentDeploymentTag(t: DeploymentTag) {
  return { tag_key_id: t.tagKeyId, key: t.key, tag_value_id: t.tagValueId, value: t.value };
}

export type TagKeyView = ReturnType<typeof presentTagKey>;
export type TagValueView = ReturnType<typeof presentTagValue>;
export type DeploymentTagView = ReturnType<typeof presentDeploymentTag>;

const keyTaken = (workspaceId: string, key: string) =>
  new ConflictError(`Tag key '${key}' already exists in workspace ID '${workspaceId}'.`);

/**
 * Tags: workspace keys (`team`), their values (`team=search`), and the values each deployment
 * carries, at most one per key. The list filter `tag_value_ids` of deployments reads these.
 */
export class TagService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly deployments: DeploymentService,
  ) {}

  private repo(): TagRepository {
    return new TagRepository(this.dataSource.manager);
  }

  // ------------------------------------------------------------------ keys

  async createKey(workspaceId: string, body: CreateTagKeyBody): Promise<TagKeyView> {
    const key = Object.assign(new TagKey(), {
      id: randomUUID(),
      workspaceId,
      key: body.key,
      description: body.description,
    });
    try {
      return presentTagKey(await this.repo().insertKey(key));
    } catch (err) {
      // The unique constraint decides races between two creates of one key.
      if (isUniqueViolation(err, TAG_KEY_UNIQUE)) throw keyTaken(workspaceId, body.key);
      throw err;
    }
  }

  async listKeys(workspaceId: string, page: Page): Promise<TagKeyView[]> {
    return (await this.repo().listKeys(workspaceId, page)).map(presentTagKey);
  }

  async getKey(workspaceId: string, id: string): Promise<TagKeyView> {
    return presentTagKey(await this.loadKey(workspaceId, id));
  }

  async patchKey(workspaceId: string, id: string, body: PatchTagKeyBody): Promise<TagKeyView> {
    const changes: TagKeyChanges = {};
    if (body.key !== undefined) changes.key = body.key;
    if (body.description !== undefined) changes.description = body.description;
    if (!Object.keys(changes).length) return this.getKey(workspaceId, id);
    try {
      const updated = await this.repo().updateKey(workspaceId, id, changes);
      if (!updated) throw NotFoundError.of('Tag key', id);
      return presentTagKey(updated);
    } catch (err) {
      if (isUniqueViolation(err, TAG_KEY_UNIQUE)) throw keyTaken(workspaceId, body.key!);
      throw err;
    }
  }

  async deleteKey(workspaceId: string, id: string): Promise<void> {
    if (!(await this.repo().deleteKey(workspaceId, id))) throw NotFoundError.of('Tag key', id);
  }

  // ---------------------------------------------------------------- values

  async createValue(workspaceId: string, tagKeyId: string, body: CreateTagValueBody): Promise<TagValueView> {
    const key = await this.loadKey(workspaceId, tagKeyId);
    const value = Object.assign(new TagValue(), { id: randomUUID(), tagKeyId, value: body.value });
    try {
      return presentTagValue(await this.repo().insertValue(value));
    } catch (err) {
      if (isUniqueViolation(err, TAG_VALUE_UNIQUE)) {
        throw new ConflictError(`Tag key '${key.key}' already has the value '${body.value}'.`);
      }
      // The key was deleted between the lookup and the insert.
      if (isForeignKeyViolation(err)) throw NotFoundError.of('Tag key', tagKeyId);
      throw err;
    }
  }

  async listValues(workspaceId: string, tagKeyId: string, page: Page): Promise<TagValueView[]> {
    await this.loadKey(workspaceId, tagKeyId);
    return (await this.repo().listValues(tagKeyId, page)).map(presentTagValue);
  }

  async deleteValue(workspaceId: string, tagKeyId: string, id: string): Promise<void> {
    await this.loadKey(workspaceId, tagKeyId);
    if (!(await this.repo().deleteValue(workspaceId, tagKeyId, id))) throw NotFoundError.of('Tag value', id);
  }

  // ----------------------------------------------------------- deployments

  async deploymentTags(workspaceId: string, deploymentId: string, page: Page): Promise<DeploymentTagView[]> {
    const deployment = await new DeploymentRepository(this.dataSource.manager).find(workspaceId, deploymentId);
    if (!deployment) throw NotFoundError.of('Deployment', deploymentId);
    return (await this.repo().deploymentTags(deploymentId, page)).map(presentDeploymentTag);
  }

  /**
   * PUT: `tagValueIds` become exactly the values the deployment carries. Every id must be a value
   * of this workspace (else 404, as for any foreign id) and no two may share a key (400).
   */
  async replaceDeploymentTags(
    workspaceId: string,
    deploymentId: string,
    tagValueIds: string[],
  ): Promise<DeploymentTagView[]> {
    return this.dataSource.transaction(async (manager) => {
      await this.deployments.lock(manager, workspaceId, deploymentId);
      const repo = new TagRepository(manager);
      const found = await repo.lockValues(workspaceId, tagValueIds);
      const known = new Set(found.map((v) => v.id));
      const missing = tagValueIds.find((id) => !known.has(id));
      if (missing) throw NotFoundError.of('Tag value', missing);

      const byKey = new Map<string, string>();
      for (const id of tagValueIds) {
        const value = found.find((v) => v.id === id)!;
        const other = byKey.get(value.tagKeyId);
        if (other) {
          throw new BadRequestError(
            `Tag values ${other} and ${id} both belong to tag key '${value.key}'; a deployment carries at most one value per key.`,
          );
        }
        byKey.set(value.tagKeyId, id);
      }
      await repo.replaceDeploymentValues(deploymentId, tagValueIds);
      // Bounded by the body's 100 ids, so the whole new set fits one page.
      return (await repo.deploymentTags(deploymentId, { limit: tagValueIds.length || 1, offset: 0 })).map(
        presentDeploymentTag,
      );
    });
  }

  private async loadKey(workspaceId: string, id: string): Promise<TagKey> {
    const key = await this.repo().findKey(workspaceId, id);
    if (!key) throw NotFoundError.of('Tag key', id);
    return key;
  }
}
