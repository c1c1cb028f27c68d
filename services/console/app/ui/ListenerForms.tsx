import { useState, type FormEvent } from 'react';
import type { Listener } from '../api/types';
import { ActionOutcome, Field, useAction, useConfirm, type Action } from './ApiCall';

/** "agents, staging" → the list; empty → null (any namespace). */
const namespacesOf = (text: string) => {
  const names = text.split(/[\s,]+/).filter(Boolean);
  return names.length ? names : null;
};

function NamespacesField({
  value,
  onChange,
  action,
}: {
  value: string;
  onChange: (v: string) => void;
  action: Action;
}) {
  return (
    <Field
      label="Namespaces"
      name="compute_config.k8s_namespaces"
      action={action}
      hint="Comma-separated; empty: any namespace."
      render={(ids) => <input {...ids} value={value} onChange={(e) => onChange(e.target.value)} />}
    />
  );
}

/** Registers a cluster (admin keys only: the API says so otherwise). */
export function CreateListener({ onCreated }: { onCreated: () => void }) {
  const action = useAction();
  const [computeId, setComputeId] = useState('');
  const [namespaces, setNamespaces] = useState('');
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const body = {
      compute_type: 'k8s',
      compute_id: computeId,
      compute_config: { k8s_namespaces: namespacesOf(namespaces) },
    };
    if (await action.perform((call) => call('POST', '/v2/listeners', body))) {
      setComputeId('');
      onCreated();
    }
  };
  return (
    <form className="form" onSubmit={submit} aria-labelledby="create-listener-title">
      <h3 id="create-listener-title">Register a listener</h3>
      <Field
        label="Compute ID"
        name="compute_id"
        action={action}
        hint="Your cluster's name, unique in the workspace."
        render={(ids) => (
          <input {...ids} required maxLength={253} value={computeId} onChange={(e) => setComputeId(e.target.value)} />
        )}
      />
      <NamespacesField value={namespaces} onChange={setNamespaces} action={action} />
      <div>
        <button type="submit" className="primary" disabled={action.busy}>
          Register
        </button>
      </div>
      <ActionOutcome action={action} />
    </form>
  );
}

/** Edit (namespaces, version) and delete one listener. */
export function ListenerActions({ listener, onChanged }: { listener: Listener; onChanged: () => void }) {
  const action = useAction();
  const [confirm, ask] = useConfirm();
  const [editing, setEditing] = useState(false);
  const [namespaces, setNamespaces] = useState(listener.compute_config?.k8s_namespaces?.join(', ') ?? '');
  const [version, setVersion] = useState(listener.version ?? '');
  const save = async (e: FormEvent) => {
    e.preventDefault();
    // compute_config replaces the stored one whole: keep its pod policy.
    const compute_config = { ...listener.compute_config, k8s_namespaces: namespacesOf(namespaces) };
    if (
      await action.perform((call) =>
        call('PATCH', `/v2/listeners/${listener.id}`, { compute_config, ...(version ? { version } : {}) }),
      )
    ) {
      setEditing(false);
      onChanged();
    }
  };
  return (
    <>
      <div className="actions">
        <button
          type="button"
          className="secondary"
          aria-expanded={editing}
          onClick={() => setEditing(!editing)}
          aria-label={`Edit listener ${listener.compute_id}`}
        >
          Edit
        </button>
        <button
          type="button"
          className="danger"
          aria-label={`Delete listener ${listener.compute_id}`}
          onClick={() =>
            ask(
              `Delete the listener ${listener.compute_id}? The API refuses while deployments use it.`,
              'Delete listener',
              () => action.perform((call) => call('DELETE', `/v2/listeners/${listener.id}`)).then(onChanged),
            )
          }
        >
          Delete
        </button>
      </div>
      {editing && (
        <form className="form" onSubmit={save}>
          <NamespacesField value={namespaces} onChange={setNamespaces} action={action} />
          <Field
            label="Version"
            name="version"
            action={action}
            render={(ids) => <input {...ids} value={version} onChange={(e) => setVersion(e.target.value)} />}
          />
          <div>
            <button type="submit" className="primary" disabled={action.busy}>
              Save
            </button>
          </div>
        </form>
      )}
      <ActionOutcome action={action} />
      {confirm}
    </>
  );
}
