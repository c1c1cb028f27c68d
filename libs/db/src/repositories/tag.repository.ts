import type { EntityManager } from 'typeorm';
import { TagKey, TagValue } from '../entities/index.js';
import { queryRows } from '../sql.js';
import { DeploymentRepository } from './deployment.repository.js';
import type { Page } from './pagination.js';

export const TAG_KEY_UNIQUE = 'tag_keys_workspace_key_key';
export const TAG_VALUE_UNIQUE = 'tag_values_key_value_key';

export interface TagKeyChanges {
  key?: string;
  description?: string;
}

/** A tag value with its key, as a deployment carries it. */
export interface DeploymentTag {
  tagKeyId: string;
  key: string;
  tagValueId: string;
  value: string;
}

/** A tag value of the workspace, with the key it belongs to (for the one-value-per-key rule). */
export interface WorkspaceTagValue {
  id: string;
  tagKeyId: string;
  key: string;
}

/**
 * Tag keys, their values, and the values deployments carry. Tag values have no workspace
 * column: they are always reached through their key, which is, so every query joins it.
 */
export class TagRepository {
  constructor(private readonly manager: EntityManager) {}

  // ------------------------------------------------------------------ keys

  /** Throws a unique violation on TAG_KEY_UNIQUE for a key the workspace already has. */
  async insertKey(key: TagKey): Promise<TagKey> {
    await this.manager.insert(TagKey, key);
    return (await this.findKey(key.workspaceId, key.id))!;
  }

  findKey(workspaceId: string, id: string): Promise<TagKey | null> {
    return this.manager.findOneBy(TagKey, { workspaceId, id });
  }

  listKeys(workspaceId: string, { limit, offset }: Page): Promise<TagKey[]> {
    return this.manager.find(TagKey, {
      where: { workspaceId },
      order: { key: 'ASC', id: 'ASC' },
      take: limit,
      skip: offset,
    });
  }

  /** Applies `changes`; null when the key does not exist. Throws a unique violation on TAG_KEY_UNIQUE. */
  async updateKey(workspaceId: string, id: string, changes: TagKeyChanges): Promise<TagKey | null> {
    const result = await this.manager
      .createQueryBuilder()
      .update(TagKey)
      .set({ ...changes, updatedAt: () => 'now()' })
      .where('id = :id AND workspace_id = :workspaceId', { id, workspaceId })
      .execute();
    return result.affected ? this.findKey(workspaceId, id) : null;
  }

  /** Deletes the key; its values and every deployment's use of them go with it (ON DELETE CASCADE). */
  async deleteKey(workspaceId: string, id: string): Promise<boolean> {
    const result = await this.manager.delete(TagKey, { workspaceId, id });
    return (result.affected ?? 0) > 0;
  }

  // ---------------------------------------------------------------- values

  /** Throws a unique violation on TAG_VALUE_UNIQUE for a value the key already has. */
  async insertValue(value: TagValue): Promise<TagValue> {
    await this.manager.insert(TagValue, value);
    return (await this.manager.findOneBy(TagValue, { id: value.id }))!;
  }

  listValues(tagKeyId: string, { limit, offset }: Page): Promise<TagValue[]> {
    return this.manager.find(TagValue, {
      where: { tagKeyId },
      order: { value: 'ASC', id: 'ASC' },
      take: limit,
      skip: offset,
    });
  }

  /** Deletes a value of the key (of the workspace); deployments stop carrying it (ON DELETE CASCADE). */
  async deleteValue(workspaceId: string, tagKeyId: string, id: string): Promise<boolean> {
    const rows = await queryRows(
      this.manager,
      `DELETE FROM tag_values v USING tag_keys k
        WHERE v.id = $1 AND v.tag_key_id = $2 AND k.id = v.tag_key_id AND k.workspace_id = $3
        RETURNING v.id`,
      [id, tagKeyId, workspaceId],
    );
    return rows.length > 0;
  }

  /**
   * The given values that belong to the workspace, locked FOR SHARE so they cannot be deleted
   * before the caller's transaction, which attaches them, commits.
   */
  async lockValues(workspaceId: string, ids: readonly string[]): Promise<WorkspaceTagValue[]> {
    if (!ids.length) return [];
    const rows = await queryRows<{ id: string; tag_key_id: string; key: string }>(
      this.manager,
      `SELECT v.id, v.tag_key_id, k.key FROM tag_values v JOIN tag_keys k ON k.id = v.tag_key_id
        WHERE v.id = ANY($1::uuid[]) AND k.workspace_id = $2
        FOR SHARE OF v`,
      [ids, workspaceId],
    );
    return rows.map((r) => ({ id: r.id, tagKeyId: r.tag_key_id, key: r.key }));
  }

  // ----------------------------------------------------------- deployments

  /** The tags a deployment carries, ordered by key. */
  async deploymentTags(deploymentId: string, { limit, offset }: Page): Promise<DeploymentTag[]> {
    const rows = await queryRows<{ tag_key_id: string; key: string; tag_value_id: string; value: string }>(
      this.manager,
      `SELECT k.id AS tag_key_id, k.key, v.id AS tag_value_id, v.value
         FROM deployment_tag_values dt
         JOIN tag_values v ON v.id = dt.tag_value_id
         JOIN tag_keys k ON k.id = v.tag_key_id
        WHERE dt.deployment_id = $1
        ORDER BY k.key, v.id
        LIMIT $2 OFFSET $3`,
      [deploymentId, limit, offset],
    );
    return rows.map((r) => ({ tagKeyId: r.tag_key_id, key: r.key, tagValueId: r.tag_value_id, value: r.value }));
  }

  /** Makes `tagValueIds` exactly the values the deployment carries. The caller holds the deployment lock. */
  async replaceDeploymentValues(deploymentId: string, tagValueIds: readonly string[]): Promise<void> {
    await this.manager.query(`DELETE FROM deployment_tag_values WHERE deployment_id = $1`, [deploymentId]);
    if (tagValueIds.length) {
      await this.manager.query(
        `INSERT INTO deployment_tag_values (deployment_id, tag_value_id) SELECT $1, unnest($2::uuid[])`,
        [deploymentId, tagValueIds],
      );
    }
    await new DeploymentRepository(this.manager).markUpdated(deploymentId);
  }
}
