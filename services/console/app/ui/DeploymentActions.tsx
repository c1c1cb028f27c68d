import { useState, type FormEvent } from 'react';
import type { Deployment, Revision } from '../api/types';
import type { Action } from './ApiCall';
import { Dialog, ErrorText, short } from './common';
import { secretValueChanges } from './secret-changes';

/** A commit as people read it: its short sha and its message's first line. */
const commitWords = (r: Revision) => {
  const sha = r.source_revision_config?.repo_commit_sha;
  if (!sha) return null;
  const message = r.source_revision_config?.repo_commit_message?.split('\n')[0];
  return message ? `${sha.slice(0, 10)} “${message}”` : sha.slice(0, 10);
};

/** Resources in words (`min_scale 1, cpu 0.5`), nested values flattened to `key.sub`. */
function resourceWords(spec: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(spec ?? {}).flatMap(([k, v]) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? resourceWords(v as Record<string, unknown>, `${prefix}${k}.`)
      : v == null
        ? []
        : [`${prefix}${k} ${String(v)}`],
  );
}

/** The secret names one revision has that the other has not (values are never shown, nor known here). */
const namesOnly = (of: Revision, without: Revision | null) => {
  const others = new Set(without?.secrets.map((s) => s.name) ?? []);
  return of.secrets
    .map((s) => s.name)
    .filter((n) => !others.has(n))
    .sort()
    .join(', ');
};

/** The fields a rollback changes, in words: the active revision's values against the chosen one's. */
export function rollbackChanges(
  active: Revision | null,
  target: Revision,
): Array<{ field: string; now: string; after: string }> {
  const show = (v: unknown) => (v === null || v === undefined || v === '' ? '—' : String(v));
  const fields: Array<[string, (r: Revision) => unknown]> = [
    ['Revision', (r) => r.id],
    ['Image / artifact', (r) => r.image_uri],
    ['Git ref', (r) => r.source_revision_config?.repo_ref],
    ['Commit', commitWords],
    ['Image requested', (r) => r.source_revision_config?.image_uri],
    ['Config file', (r) => r.source_revision_config?.graph_config_path],
    ['Resources', (r) => resourceWords(r.resource_spec).join(', ')],
  ];
  const rows = fields
    .map(([field, read]) => ({ field, now: active ? show(read(active)) : '—', after: show(read(target)) }))
    .filter((c) => c.now !== c.after);
  // Secrets by name: which the rollback brings back, which it removes.
  const added = namesOnly(target, active);
  const removed = active ? namesOnly(active, target) : '';
  if (added) rows.push({ field: 'Secrets added', now: '—', after: added });
  if (removed) rows.push({ field: 'Secrets removed', now: removed, after: '—' });
  rows.push(...secretValueChanges(active, target));
  return rows;
}

/** Redeploys an earlier revision (no rebuild), after showing what will change. */
export function RollbackDialog(props: {
  deployment: Deployment;
  target: Revision | null;
  active: Revision | null;
  action: Action;
  onClose: () => void;
  onDone: (newRevisionId: string) => void;
}) {
  const { target, active, deployment, action } = props;
  const confirm = async () => {
    if (!target) return;
    const updated = await action.perform((call) =>
      call<Deployment>('POST', `/v2/deployments/${deployment.id}/revisions/${target.id}/redeploy`),
    );
    if (updated) props.onDone(updated.latest_revision_id ?? '');
  };
  const changes = target ? rollbackChanges(active, target) : [];
  return (
    <Dialog title={`Roll back to revision ${short(target?.id)}`} open={!!target} onClose={props.onClose}>
      <p>
        A new revision will redeploy revision <code>{target?.id}</code> as it was built (no rebuild). The active
        revision keeps serving until the new one is healthy.
      </p>
      {changes.length ? (
        <div className="table-scroll">
          <table className="changes">
            <caption>What changes</caption>
            <thead>
              <tr>
                <th scope="col">Field</th>
                <th scope="col">Now</th>
                <th scope="col">After the rollback</th>
              </tr>
            </thead>
            <tbody>
              {changes.map((c) => (
                <tr key={c.field}>
                  <th scope="row">{c.field}</th>
                  <td>{c.now}</td>
                  <td>{c.after}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p>Nothing differs from the active revision.</p>
      )}
      <ErrorText error={action.error} />
      <div className="dialog-buttons">
        <button type="button" className="primary" onClick={confirm} disabled={action.busy}>
          {action.busy ? 'Rolling back…' : 'Roll back'}
        </button>
        <button type="button" onClick={props.onClose}>
          Cancel
        </button>
      </div>
    </Dialog>
  );
}

/** Deletes the deployment once its name is typed. */
export function DeleteDialog(props: {
  deployment: Deployment;
  open: boolean;
  action: Action;
  onClose: () => void;
  onDone: () => void;
}) {
  const [typed, setTyped] = useState('');
  const { deployment, action } = props;
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (typed !== deployment.name) return;
    if (await action.perform(async (call) => (await call('DELETE', `/v2/deployments/${deployment.id}`), true)))
      props.onDone();
  };
  return (
    <Dialog title={`Delete ${deployment.name}`} open={props.open} onClose={props.onClose}>
      <form onSubmit={submit}>
        <p id="delete-help">
          This stops every revision and tears down the deployment's compute and database. Type{' '}
          <strong>{deployment.name}</strong> to confirm.
        </p>
        <label htmlFor="delete-name">Deployment name</label>
        <input
          id="delete-name"
          value={typed}
          onChange={(e) => setTyped(e.target.value)}
          aria-describedby="delete-help"
          autoComplete="off"
        />
        <ErrorText error={action.error} />
        <div className="dialog-buttons">
          <button type="submit" className="danger" disabled={typed !== deployment.name}>
            Delete
          </button>
          <button type="button" className="secondary" onClick={props.onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}
