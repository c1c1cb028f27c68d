import type { Api } from '../api/client';
import type { Envelope, TagKey, TagValue } from '../api/types';
import { SelectField, type Action, type CallFn } from './ApiCall';
import { ErrorText, useApi, useLoad } from './common';

/** Every tag key of the workspace with its values (docs/api.md, Tags). */
export async function loadTagChoices(
  api: Api,
  signal: AbortSignal,
): Promise<Array<{ key: TagKey; values: TagValue[] }>> {
  const keys = await api.get<Envelope<TagKey>>('/v2/tags/keys', { limit: 100 }, signal);
  return Promise.all(
    keys.resources.map(async (key) => ({
      key,
      values: (await api.get<Envelope<TagValue>>(`/v2/tags/keys/${key.id}/values`, { limit: 100 }, signal)).resources,
    })),
  );
}

/** Whether two choices of tag values differ (the order they were picked in does not count). */
export const tagsChanged = (a: readonly string[], b: readonly string[]) =>
  [...a].sort().join() !== [...b].sort().join();

/**
 * Sets the tags a deployment carries: one PUT of all of them (the API replaces the set, and
 * neither the create nor the PATCH body takes tags).
 */
export const putTags = (call: CallFn, deploymentId: string, tagValueIds: readonly string[]) =>
  call('PUT', `/v2/deployments/${deploymentId}/tags`, { tag_value_ids: tagValueIds });

/**
 * A choice of one value (or none) per tag key of the workspace: a deployment carries at most one
 * value of each key. `chosen` is the tag value ids picked.
 */
export function TagsFields({
  chosen,
  onChange,
  action,
}: {
  chosen: readonly string[];
  onChange: (ids: string[]) => void;
  action: Action;
}) {
  const api = useApi();
  const choices = useLoad((signal) => loadTagChoices(api, signal), [api]);
  const keys = choices.data ?? [];
  return (
    <fieldset>
      <legend>Tags</legend>
      <ErrorText error={choices.error} />
      {choices.data && !keys.length && (
        <p className="hint">
          No tag keys yet: add keys and values on <a href="#/workspace">Tags and quotas</a>.
        </p>
      )}
      {keys.map(({ key, values }) => {
        const ofKey = new Set(values.map((v) => v.id));
        return (
          <SelectField
            key={key.id}
            label={`Tag ${key.key}`}
            name="tag_value_ids"
            action={action}
            value={chosen.find((id) => ofKey.has(id)) ?? ''}
            options={[['', 'None'], ...values.map((v) => [v.id, v.value] as const)]}
            onChange={(id) => onChange([...chosen.filter((c) => !ofKey.has(c)), ...(id ? [id] : [])])}
          />
        );
      })}
    </fieldset>
  );
}
