import { useState, type FormEvent } from 'react';
import type { ApiKey } from '../api/types';
import { formatTime } from '../phases';
import { ActionOutcome, CopyButton, Field, SelectField, useAction, useConfirm } from './ApiCall';
import { ErrorText, PageHeading, useApi, useLoad } from './common';

/** Creates a key; the key itself is shown once, here, to be copied. */
function CreateKey({ onCreated }: { onCreated: () => void }) {
  const action = useAction();
  const [description, setDescription] = useState('');
  const [role, setRole] = useState<'member' | 'admin'>('member');
  const [scope, setScope] = useState<'workspace' | 'organization'>('workspace');
  const [created, setCreated] = useState<(ApiKey & { key: string }) | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setCreated(null);
    const key = await action.perform((call) =>
      call<ApiKey & { key: string }>('POST', '/v2/api-keys', { description, role, scope }),
    );
    if (key) {
      setCreated(key);
      setDescription('');
      onCreated();
    }
  };
  return (
    <form className="form" onSubmit={submit} aria-labelledby="create-key-title">
      <h2 id="create-key-title">Create an API key</h2>
      <Field
        label="Description"
        name="description"
        action={action}
        render={(ids) => (
          <input {...ids} value={description} maxLength={500} onChange={(e) => setDescription(e.target.value)} />
        )}
      />
      <SelectField
        label="Role"
        name="role"
        action={action}
        hint="Members deploy; admins also manage keys, webhooks, listeners and integrations."
        value={role}
        options={[
          ['member', 'member'],
          ['admin', 'admin'],
        ]}
        onChange={setRole}
      />
      <SelectField
        label="Scope"
        name="scope"
        action={action}
        hint="An organization key acts on any workspace of the organization (with X-Tenant-Id); only organization admins create one."
        value={scope}
        options={[
          ['workspace', 'workspace'],
          ['organization', 'organization'],
        ]}
        onChange={setScope}
      />
      <div>
        <button type="submit" className="primary" disabled={action.busy}>
          {action.busy ? 'Creating…' : 'Create key'}
        </button>
      </div>
      <ActionOutcome action={action}>
        {created && (
          <div className="shown-once" role="status">
            <p>
              <strong>Copy this key now: it is shown only once.</strong>
            </p>
            <pre aria-label="The new API key">{created.key}</pre>
            <CopyButton text={created.key} label="Copy key" />
          </div>
        )}
      </ActionOutcome>
    </form>
  );
}

export function ApiKeysPage() {
  const api = useApi();
  const keys = useLoad((signal) => api.get<ApiKey[]>('/v2/api-keys', undefined, signal), [api]);
  const revoke = useAction();
  const [confirm, ask] = useConfirm();
  return (
    <>
      <PageHeading>API keys</PageHeading>
      <CreateKey onCreated={keys.reload} />
      <section aria-labelledby="keys-title">
        <h2 id="keys-title">Active keys</h2>
        <ErrorText error={keys.error} />
        <ActionOutcome action={revoke} />
        {keys.data && keys.data.length === 0 && <p className="empty-state">No keys visible to this key.</p>}
        <ul className="cards">
          {(keys.data ?? []).map((k) => (
            <li key={k.id} className="card" data-key-id={k.id}>
              <div className="card-head">
                <code>{k.prefix}…</code>
                <span>{k.description || 'no description'}</span>
                <span className="note">
                  {k.role}, {k.scope}
                  {k.listener_id ? `, agent of listener ${k.listener_id}` : ''}
                </span>
                <span className="note">created {formatTime(k.created_at)}</span>
                <span className="note">last used {k.last_used_at ? formatTime(k.last_used_at) : 'never'}</span>
                <button
                  type="button"
                  className="danger"
                  aria-label={`Revoke key ${k.prefix}`}
                  onClick={() =>
                    ask(
                      `Revoke the key ${k.prefix}… (${k.description || 'no description'})? Every client using it is refused from now on.`,
                      'Revoke key',
                      () => revoke.perform((call) => call('DELETE', `/v2/api-keys/${k.id}`)).then(keys.reload),
                    )
                  }
                >
                  Revoke
                </button>
              </div>
            </li>
          ))}
        </ul>
      </section>
      {confirm}
    </>
  );
}
