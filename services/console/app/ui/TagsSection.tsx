import { useState, type FormEvent } from 'react';
import type { Envelope, TagKey, TagValue } from '../api/types';
import { ActionOutcome, Field, useAction, useConfirm } from './ApiCall';
import { ErrorText, useApi, useLoad } from './common';

/** One key's values: add one, delete one (confirmed). */
function TagValues({ tagKey }: { tagKey: TagKey }) {
  const api = useApi();
  const values = useLoad(
    (signal) => api.get<Envelope<TagValue>>(`/v2/tags/keys/${tagKey.id}/values`, { limit: 100 }, signal),
    [api, tagKey.id],
  );
  const action = useAction();
  const [confirm, ask] = useConfirm();
  const [value, setValue] = useState('');
  const add = async (e: FormEvent) => {
    e.preventDefault();
    if (await action.perform((call) => call('POST', `/v2/tags/keys/${tagKey.id}/values`, { value }))) setValue('');
    values.reload();
  };
  return (
    <>
      <ErrorText error={values.error} />
      <ul className="tag-values" aria-label={`Values of ${tagKey.key}`}>
        {(values.data?.resources ?? []).map((v) => (
          <li key={v.id}>
            <code>{v.value}</code>{' '}
            <button
              type="button"
              className="danger"
              aria-label={`Delete value ${v.value} of ${tagKey.key}`}
              onClick={() =>
                ask(
                  `Delete the value ${v.value} of ${tagKey.key}? Deployments carrying it lose it.`,
                  'Delete value',
                  () =>
                    action
                      .perform((call) => call('DELETE', `/v2/tags/keys/${tagKey.id}/values/${v.id}`))
                      .then(values.reload),
                )
              }
            >
              Delete
            </button>
          </li>
        ))}
      </ul>
      <form className="inline-form" onSubmit={add}>
        <Field
          label={`New value of ${tagKey.key}`}
          name="value"
          action={action}
          render={(ids) => (
            <input {...ids} required maxLength={255} value={value} onChange={(e) => setValue(e.target.value)} />
          )}
        />
        <button type="submit" className="primary" disabled={action.busy}>
          Add value
        </button>
      </form>
      <ActionOutcome action={action} />
      {confirm}
    </>
  );
}

/** Tag keys of the workspace with their values (docs/api.md, Tags). */
export function TagsSection() {
  const api = useApi();
  const keys = useLoad((signal) => api.get<Envelope<TagKey>>('/v2/tags/keys', { limit: 100 }, signal), [api]);
  const action = useAction();
  const [confirm, ask] = useConfirm();
  const [key, setKey] = useState('');
  const [renaming, setRenaming] = useState<{ id: string; key: string } | null>(null);
  const create = async (e: FormEvent) => {
    e.preventDefault();
    if (await action.perform((call) => call('POST', '/v2/tags/keys', { key }))) setKey('');
    keys.reload();
  };
  const rename = async (e: FormEvent) => {
    e.preventDefault();
    if (!renaming) return;
    if (await action.perform((call) => call('PATCH', `/v2/tags/keys/${renaming.id}`, { key: renaming.key })))
      setRenaming(null);
    keys.reload();
  };
  const list = keys.data?.resources ?? [];
  return (
    <section aria-labelledby="tags-title">
      <h2 id="tags-title">Tags</h2>
      <p className="hint">Keys and values to attach to deployments and filter the list by.</p>
      <form className="inline-form" onSubmit={create}>
        <Field
          label="New tag key"
          name="key"
          action={action}
          hint="Letters, digits and _ . : -"
          render={(ids) => (
            <input {...ids} required maxLength={100} value={key} onChange={(e) => setKey(e.target.value)} />
          )}
        />
        <button type="submit" className="primary" disabled={action.busy}>
          Create key
        </button>
      </form>
      <ErrorText error={keys.error} />
      <ActionOutcome action={action} />
      {keys.data && !list.length && (
        <p className="empty-state">No tag keys yet: create one above, then give it values.</p>
      )}
      <ul className="cards">
        {list.map((k) => (
          <li key={k.id} className="card" data-tag-key-id={k.id}>
            {renaming?.id === k.id ? (
              <form className="inline-form" onSubmit={rename}>
                <Field
                  label={`New name of ${k.key}`}
                  name="key"
                  action={action}
                  render={(ids) => (
                    <input
                      {...ids}
                      required
                      value={renaming.key}
                      onChange={(e) => setRenaming({ id: k.id, key: e.target.value })}
                    />
                  )}
                />
                <button type="submit" className="primary">
                  Rename
                </button>
                <button type="button" className="ghost" onClick={() => setRenaming(null)}>
                  Cancel
                </button>
              </form>
            ) : (
              <div className="card-head">
                <h3>{k.key}</h3>
                <button type="button" className="secondary" onClick={() => setRenaming({ id: k.id, key: k.key })}>
                  Rename
                </button>
                <button
                  type="button"
                  className="danger"
                  aria-label={`Delete tag key ${k.key}`}
                  onClick={() =>
                    ask(`Delete the tag key ${k.key} and its values?`, 'Delete tag key', () =>
                      action.perform((call) => call('DELETE', `/v2/tags/keys/${k.id}`)).then(keys.reload),
                    )
                  }
                >
                  Delete
                </button>
              </div>
            )}
            <TagValues tagKey={k} />
          </li>
        ))}
      </ul>
      {confirm}
    </section>
  );
}
