import { useEffect, useState, type FormEvent } from 'react';
import { EVENT_TYPES, type Envelope, type Webhook, type WebhookDelivery } from '../api/types';
import { formatTime } from '../phases';
import { ActionOutcome, Field, SelectField, useAction, useConfirm } from './ApiCall';
import { ErrorText, PageHeading, useApi, useLoad } from './common';

/** Comma- or space-separated ids as a list; empty is null (every deployment). */
const idList = (text: string) => {
  const ids = text.split(/[\s,]+/).filter(Boolean);
  return ids.length ? ids : null;
};

function CreateWebhook({ onCreated }: { onCreated: () => void }) {
  const action = useAction();
  const [url, setUrl] = useState('');
  const [types, setTypes] = useState<string[]>(['revision.status_changed']);
  const [deployments, setDeployments] = useState('');
  const [description, setDescription] = useState('');
  const [format, setFormat] = useState<'standard' | 'slack'>('standard');
  const [secret, setSecret] = useState<string | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setSecret(null);
    if (!types.length)
      return action.fail('Choose at least one event type.', [
        { field: 'event_types', message: 'Choose at least one event type.' },
      ]);
    const body = {
      url,
      event_types: types,
      deployment_ids: idList(deployments),
      description: description || null,
      format,
    };
    const hook = await action.perform((call) => call<Webhook & { secret: string }>('POST', '/v2/webhooks', body));
    if (hook) {
      setSecret(hook.secret);
      setUrl('');
      onCreated();
    }
  };
  return (
    <form className="form" onSubmit={submit} aria-labelledby="create-hook-title">
      <h2 id="create-hook-title">Create a webhook</h2>
      <Field
        label="Receiver URL"
        name="url"
        action={action}
        hint="https, or http to a host the server allows; events are POSTed here, signed."
        render={(ids) => <input {...ids} type="url" required value={url} onChange={(e) => setUrl(e.target.value)} />}
      />
      <fieldset aria-describedby={action.issueFor('event_types') ? 'hook-types-error' : undefined}>
        <legend>Event types</legend>
        {EVENT_TYPES.map((t) => (
          <label key={t}>
            <input
              type="checkbox"
              checked={types.includes(t)}
              onChange={(e) => setTypes(e.target.checked ? [...types, t] : types.filter((x) => x !== t))}
            />{' '}
            {t}
          </label>
        ))}
        {action.issueFor('event_types') && (
          <span id="hook-types-error" className="field-error">
            {action.issueFor('event_types')}
          </span>
        )}
      </fieldset>
      <Field
        label="Only these deployments (ids, optional)"
        name="deployment_ids"
        action={action}
        hint="Leave empty for every deployment of the workspace."
        render={(ids) => <input {...ids} value={deployments} onChange={(e) => setDeployments(e.target.value)} />}
      />
      <Field
        label="Description"
        name="description"
        action={action}
        render={(ids) => <input {...ids} value={description} onChange={(e) => setDescription(e.target.value)} />}
      />
      <SelectField
        label="Format"
        name="format"
        action={action}
        value={format}
        options={[
          ['standard', 'standard (the event as JSON)'],
          ['slack', 'slack (a message)'],
        ]}
        onChange={setFormat}
      />
      <div>
        <button type="submit" className="primary" disabled={action.busy}>
          {action.busy ? 'Creating…' : 'Create webhook'}
        </button>
      </div>
      <ActionOutcome action={action}>
        {secret && (
          <div className="shown-once" role="status">
            <p>
              <strong>The signing secret, shown only once:</strong> verify each delivery's{' '}
              <code>webhook-signature</code> with it.
            </p>
            <pre aria-label="The webhook's signing secret">{secret}</pre>
          </div>
        )}
      </ActionOutcome>
    </form>
  );
}

/** How often the history is read again while a delivery is still being attempted. */
const PENDING_POLL_MS = 2_000;

/**
 * A webhook's deliveries, newest first, each with its attempts; redeliver sends one again, and
 * *Send test delivery* sends this webhook alone a signed `webhook.test` event. The history is
 * re-read while any delivery is pending, so an outcome shows without a click.
 */
function Deliveries({ webhook }: { webhook: Webhook }) {
  const api = useApi();
  const deliveries = useLoad(
    (signal) => api.get<Envelope<WebhookDelivery>>(`/v2/webhooks/${webhook.id}/deliveries`, { limit: 20 }, signal),
    [api, webhook.id],
  );
  const redeliver = useAction();
  const test = useAction();
  const list = deliveries.data?.resources ?? [];
  const pending = list.some((d) => d.status === 'pending');
  const { data, reload } = deliveries;
  useEffect(() => {
    if (!pending) return;
    const timer = setTimeout(reload, PENDING_POLL_MS);
    return () => clearTimeout(timer);
  }, [pending, data, reload]);
  return (
    <section aria-label={`Deliveries of ${webhook.url}`}>
      <div className="actions">
        <button
          type="button"
          className="secondary"
          disabled={test.busy}
          onClick={() => test.perform((call) => call('POST', `/v2/webhooks/${webhook.id}/test`)).then(reload)}
        >
          {test.busy ? 'Sending…' : 'Send test delivery'}
        </button>
        <button type="button" className="secondary" onClick={reload}>
          Refresh deliveries
        </button>
      </div>
      <ErrorText error={deliveries.error} />
      <ActionOutcome action={test}>
        <p role="status">Test delivery queued: it shows in the history below as it is attempted.</p>
      </ActionOutcome>
      <ActionOutcome action={redeliver} />
      {deliveries.data && !list.length && (
        <p className="empty-state">
          No deliveries yet. A webhook receives the events that happen after it was created: deploy or change a
          deployment to send one, or send a test delivery.
        </p>
      )}
      {list.length > 0 && (
        <div className="table-scroll">
          <table>
            <caption>Deliveries, newest event first</caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Action</th>
              </tr>
            </thead>
            <tbody>
              {list.map((d) => {
                const last = d.attempts[d.attempts.length - 1];
                return (
                  <tr key={d.id} data-delivery-id={d.id}>
                    <th scope="row">
                      {d.event_type} <span className="note">#{d.event_id}</span>
                    </th>
                    <td>
                      <span
                        className={`badge badge-${d.status === 'succeeded' ? 'ok' : d.status === 'failed' ? 'failed' : 'progress'}`}
                        data-status={d.status}
                      >
                        {d.status}
                      </span>
                    </td>
                    <td>
                      {d.attempts.length}
                      {last && (
                        <span className="note">
                          {' '}
                          (last {formatTime(last.attempted_at)}: {last.response_status ?? last.error ?? 'no answer'})
                        </span>
                      )}
                    </td>
                    <td>
                      <button
                        type="button"
                        className="secondary"
                        disabled={d.status === 'pending' || redeliver.busy}
                        aria-label={`Redeliver event ${d.event_id}`}
                        onClick={() =>
                          redeliver
                            .perform((call) => call('POST', `/v2/webhooks/${webhook.id}/deliveries/${d.id}/redeliver`))
                            .then(reload)
                        }
                      >
                        Redeliver
                      </button>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

export function WebhooksPage() {
  const api = useApi();
  const hooks = useLoad((signal) => api.get<Envelope<Webhook>>('/v2/webhooks', { limit: 100 }, signal), [api]);
  const remove = useAction();
  const [confirm, ask] = useConfirm();
  const [open, setOpen] = useState<string | null>(null);
  const list = hooks.data?.resources ?? [];
  return (
    <>
      <PageHeading>Webhooks</PageHeading>
      <CreateWebhook onCreated={hooks.reload} />
      <section aria-labelledby="hooks-title">
        <h2 id="hooks-title">Webhooks of this workspace</h2>
        <ErrorText error={hooks.error} />
        <ActionOutcome action={remove} />
        {hooks.data && !list.length && (
          <p className="empty-state">No webhooks yet: create one above to have events POSTed to a URL.</p>
        )}
        <ul className="cards">
          {list.map((h) => (
            <li key={h.id} className="card" data-webhook-id={h.id}>
              <div className="card-head">
                <code className="url">{h.url}</code>
                <span className="note">
                  {h.format}; {h.event_types.join(', ')};{' '}
                  {h.deployment_ids ? `${h.deployment_ids.length} deployment(s)` : 'every deployment'}
                </span>
                {h.description && <span>{h.description}</span>}
              </div>
              <div className="actions">
                <button
                  type="button"
                  className="secondary"
                  aria-expanded={open === h.id}
                  onClick={() => setOpen(open === h.id ? null : h.id)}
                >
                  {open === h.id ? 'Hide deliveries' : 'Deliveries'}
                </button>
                <button
                  type="button"
                  className="danger"
                  onClick={() =>
                    ask(`Delete the webhook to ${h.url}? Its delivery history goes with it.`, 'Delete webhook', () =>
                      remove.perform((call) => call('DELETE', `/v2/webhooks/${h.id}`)).then(hooks.reload),
                    )
                  }
                >
                  Delete
                </button>
              </div>
              {open === h.id && <Deliveries webhook={h} />}
            </li>
          ))}
        </ul>
      </section>
      {confirm}
    </>
  );
}
