import { useState, type FormEvent } from 'react';
import type { Branch, Deployment, Integration, Revision } from '../api/types';
import { ActionOutcome, Field, SelectField, useAction } from './ApiCall';
import { useApi, useLoad } from './common';

const SHA = /^[0-9a-f]{7,40}$/i;

/** Whether a deployment builds from a repository of an integration. */
export const isRepohost = (d: Deployment) =>
  (d.source === 'repohost' || d.source === 'github') && typeof d.source_config?.integration_id === 'string';

const integrationIdOf = (d: Deployment) => String(d.source_config?.integration_id ?? '');
const repoUrlOf = (d: Deployment) => String(d.source_config?.repo_url ?? '');

/** The integration of a repohost deployment (for its webhook URL), or null while unknown. */
export function useIntegration(deployment: Deployment): Integration | null {
  const api = useApi();
  const id = isRepohost(deployment) ? integrationIdOf(deployment) : '';
  const loaded = useLoad(
    (signal) =>
      id ? api.get<Integration>(`/v1/integrations/repohost/${id}`, undefined, signal) : Promise.resolve(null),
    [api, id],
  );
  return loaded.data;
}

/**
 * "Deploy latest commit" and "Deploy a branch or commit" for a repohost deployment: a PATCH
 * naming `repo_ref` (the build resolves the branch's head then), with `repo_commit_sha` for one commit.
 */
export function DeployFromRepository({
  deployment,
  latest,
  onDone,
}: {
  deployment: Deployment;
  latest: Revision | null;
  onDone: (message: string) => void;
}) {
  const api = useApi();
  const action = useAction();
  const [open, setOpen] = useState(false);
  const [branch, setBranch] = useState('');
  const [sha, setSha] = useState('');
  const currentRef =
    latest?.source_revision_config?.repo_ref ??
    (deployment.source_revision_config?.repo_ref as string | undefined) ??
    '';
  const branches = useLoad(
    (signal) =>
      open
        ? api.get<Branch[]>(
            `/v1/integrations/repohost/${integrationIdOf(deployment)}/branches`,
            { repo_url: repoUrlOf(deployment) },
            signal,
          )
        : Promise.resolve([] as Branch[]),
    [api, open, deployment.id],
  );
  const chosen = branch || currentRef;

  const deploy = async (revisionConfig: { repo_ref: string; repo_commit_sha?: string }, what: string) => {
    const updated = await action.perform((call) =>
      call<Deployment>('PATCH', `/v2/deployments/${deployment.id}`, { source_revision_config: revisionConfig }),
    );
    if (updated) onDone(`Deploying ${what}: revision ${updated.latest_revision_id} builds it.`);
    return updated;
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const commit = sha.trim();
    if (commit && !SHA.test(commit))
      return action.fail('Some fields need attention.', [
        { field: 'source_revision_config.repo_commit_sha', message: 'A commit sha: 7 to 40 hexadecimal digits.' },
      ]);
    if (!chosen)
      return action.fail('Some fields need attention.', [
        { field: 'source_revision_config.repo_ref', message: 'Pick a branch.' },
      ]);
    const done = await deploy(
      commit ? { repo_ref: chosen, repo_commit_sha: commit } : { repo_ref: chosen },
      commit ? `commit ${commit.slice(0, 10)} of ${chosen}` : `the newest commit of ${chosen}`,
    );
    if (done) setSha('');
  };

  return (
    <section aria-labelledby="deploy-repo-title">
      <h2 id="deploy-repo-title">Deploy from the repository</h2>
      <div className="actions">
        <button
          type="button"
          className="primary"
          disabled={action.busy || !currentRef}
          onClick={() => deploy({ repo_ref: currentRef }, `the newest commit of ${currentRef}`)}
        >
          Deploy latest commit
        </button>
        <span className="hint">The newest commit of {currentRef ? <code>{currentRef}</code> : 'its branch'}.</span>
        <button type="button" className="secondary" aria-expanded={open} onClick={() => setOpen(!open)}>
          Deploy a branch or commit
        </button>
      </div>
      {open && (
        <form className="form" onSubmit={submit} noValidate aria-label="Deploy a branch or commit">
          <SelectField
            label="Branch"
            name="source_revision_config.repo_ref"
            action={action}
            hint={branches.error ?? undefined}
            value={chosen}
            options={[
              ...(branches.data?.some((b) => b.name === chosen) || !chosen ? [] : [[chosen, chosen] as const]),
              ...(branches.data ?? []).map(
                (b) => [b.name, `${b.name} (${b.commit_sha.slice(0, 10)})${b.is_default ? ', default' : ''}`] as const,
              ),
            ]}
            onChange={setBranch}
          />
          <Field
            label="Commit (optional)"
            name="source_revision_config.repo_commit_sha"
            action={action}
            hint="A sha of that branch; empty: its newest commit."
            render={(ids) => <input {...ids} value={sha} spellCheck={false} onChange={(e) => setSha(e.target.value)} />}
          />
          <div>
            <button type="submit" className="primary" disabled={action.busy}>
              Deploy
            </button>
          </div>
        </form>
      )}
      <ActionOutcome action={action} />
    </section>
  );
}

/**
 * `build_on_push` for the edit form, with what makes a push reach Slipway: the webhook URL the
 * host must call, signed with the secret shown when the integration was connected (never
 * again); for a `local` integration, which has no host, the push hook shown then.
 */
export function BuildOnPushField({
  deployment,
  checked,
  onChange,
}: {
  deployment: Deployment;
  checked: boolean;
  onChange: (checked: boolean) => void;
}) {
  const integration = useIntegration(deployment);
  const url = integration?.webhook_url ? <code>{integration.webhook_url}</code> : "the integration's webhook URL";
  return (
    <div className="field">
      <label>
        <input type="checkbox" checked={checked} onChange={(e) => onChange(e.target.checked)} /> Build on push
      </label>
      {integration?.provider === 'local' ? (
        <span className="hint">
          A commit to the branch builds and deploys it, once the repository has the push hook shown when{' '}
          {integration.name} was connected: a local integration has no host, so the hook calls {url} itself, signed with
          the integration's webhook secret.
        </span>
      ) : (
        <span className="hint">
          A push to the branch builds and deploys it, once the repository host sends its push events to {url}, signed
          with the webhook secret shown when the integration was connected.
        </span>
      )}
    </div>
  );
}
