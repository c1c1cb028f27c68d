import { useEffect, useState, type FormEvent } from 'react';
import type { Deployment, DeploymentDomain, DomainState, Envelope } from '../api/types';
import { ActionOutcome, CopyButton, Field, useAction, useConfirm } from './ApiCall';
import { ErrorText, useApi, useLoad } from './common';

/** Each state in words, and the badge colour it gets (docs/api.md, Domains). */
const STATES: Record<DomainState, { label: string; kind: 'ok' | 'failed' | 'progress' }> = {
  pending_verification: { label: 'Waiting for DNS proof', kind: 'progress' },
  issuing: { label: 'Getting a certificate', kind: 'progress' },
  active: { label: 'Active', kind: 'ok' },
  failed: { label: 'Failed', kind: 'failed' },
};

/** How often the list is read again while a domain is still on its way (pending or issuing). */
const PENDING_POLL_MS = 5_000;

const isOnItsWay = (d: DeploymentDomain) => d.state === 'pending_verification' || d.state === 'issuing';

function StateBadge({ domain }: { domain: DeploymentDomain }) {
  const state = STATES[domain.state] ?? { label: domain.state, kind: 'progress' };
  return (
    <span
      className={`badge badge-${state.kind}`}
      data-state={domain.state}
      aria-label={`State of ${domain.host}: ${state.label}`}
    >
      {state.label}
    </span>
  );
}

/** The TXT record that proves control of the host, each part copyable, and what to do with it. */
function VerificationRecord({ host, record }: { host: string; record: NonNullable<DeploymentDomain['verification']> }) {
  return (
    <div className="domain-proof">
      <p>
        To prove you control {host}, publish this {record.type} record at your DNS provider. Slipway checks for it
        regularly and routes the domain once it is found.
      </p>
      <dl className="domain-record">
        <div>
          <dt>Type</dt>
          <dd>
            <code>{record.type}</code>
          </dd>
        </div>
        <div>
          <dt>Name</dt>
          <dd>
            <code>{record.name}</code> <CopyButton text={record.name} label="Copy" />
          </dd>
        </div>
        <div>
          <dt>Value</dt>
          <dd>
            <code>{record.value}</code> <CopyButton text={record.value} label="Copy" />
          </dd>
        </div>
      </dl>
    </div>
  );
}

function Domains({ deploymentId }: { deploymentId: string }) {
  const api = useApi();
  const domains = useLoad(
    (signal) => api.get<Envelope<DeploymentDomain>>(`/v2/deployments/${deploymentId}/domains`, undefined, signal),
    [api, deploymentId],
  );
  // Add and remove: one action of the section, its error (the API's detail) and API call shown under the form.
  const action = useAction();
  const [confirm, ask] = useConfirm();
  const [host, setHost] = useState('');
  const list = domains.data?.resources ?? [];
  const waiting = list.some(isOnItsWay);
  const { reload } = domains;
  useEffect(() => {
    if (!waiting) return;
    const timer = setInterval(() => !document.hidden && reload(), PENDING_POLL_MS);
    return () => clearInterval(timer);
  }, [waiting, reload]);

  const add = async (e: FormEvent) => {
    e.preventDefault();
    if (
      await action.perform((call) =>
        call<DeploymentDomain>('POST', `/v2/deployments/${deploymentId}/domains`, { host: host.trim() }),
      )
    )
      setHost('');
    reload();
  };
  const remove = (d: DeploymentDomain) =>
    ask(
      `Remove ${d.host} from this deployment? The edge stops routing it at once, and any deployment may claim it afterwards.${d.from_custom_url ? ' It is the host of source_config.custom_url, which keeps its value.' : ''}`,
      'Remove domain',
      () =>
        action
          .perform((call) => call('DELETE', `/v2/deployments/${deploymentId}/domains/${encodeURIComponent(d.host)}`))
          .then(reload),
    );

  return (
    <section aria-labelledby="domains-title">
      <h2 id="domains-title">Domains</h2>
      <p className="hint">
        Host names the deployment answers at besides its own URL. Each is routed once you prove you control it with a
        DNS record.
      </p>
      <ErrorText error={domains.error} />
      {domains.data && !list.length && (
        <p className="empty-state">No custom domains: the deployment answers at its own URL only. Add one below.</p>
      )}
      {list.length > 0 && (
        <ul className="cards" aria-label="Custom domains">
          {list.map((d) => (
            <li key={d.host} className="card" data-host={d.host}>
              <div className="card-head">
                <h3>
                  {d.state === 'active' ? (
                    <a className="url" href={`https://${d.host}`}>
                      {d.host}
                    </a>
                  ) : (
                    d.host
                  )}
                </h3>
                <StateBadge domain={d} />
                {d.from_custom_url && <span className="hint">from source_config.custom_url</span>}
                <button
                  type="button"
                  className="danger"
                  aria-label={`Remove ${d.host}`}
                  disabled={action.busy}
                  onClick={() => remove(d)}
                >
                  Remove
                </button>
              </div>
              {d.error && <p className={d.state === 'failed' ? 'message' : 'hint'}>{d.error}</p>}
              {d.state === 'pending_verification' && d.verification && (
                <VerificationRecord host={d.host} record={d.verification} />
              )}
            </li>
          ))}
        </ul>
      )}
      {waiting && (
        <p className="hint">Checking again every {PENDING_POLL_MS / 1000} seconds while a domain is on its way.</p>
      )}
      <form className="inline-form" aria-label="Add a domain" onSubmit={add}>
        <Field
          label="Domain to add"
          name="host"
          action={action}
          hint="A host name such as agent.example.com"
          render={(ids) => (
            <input
              {...ids}
              required
              maxLength={2048}
              autoComplete="off"
              spellCheck={false}
              value={host}
              onChange={(e) => setHost(e.target.value)}
            />
          )}
        />
        <button type="submit" className="primary" disabled={action.busy}>
          Add domain
        </button>
      </form>
      <ActionOutcome action={action} />
      {confirm}
    </section>
  );
}

/**
 * A deployment's custom domains (docs/api.md, Domains): each with its state, the TXT record to
 * publish while it is unproven, and a confirmed Remove; a form claims another. Re-read every
 * few seconds while one is pending or issuing. Nothing for a deployment on a listener, whose
 * cluster renders its own Ingress from `source_config.custom_url`.
 */
export function DomainsSection({ deployment }: { deployment: Deployment }) {
  if (deployment.source_config?.listener_id) return null;
  return <Domains key={deployment.id} deploymentId={deployment.id} />;
}
