import { useState, type FormEvent } from 'react';
import type { Branch, Deployment, Envelope, Integration, Listener, Repository } from '../api/types';
import { DEPLOYMENT_TYPES } from '../api/types';
import { ActionOutcome, Field, SelectField, useAction, type CallFn } from './ApiCall';
import { navigate, PageHeading, useApi, useLoad } from './common';
import { handOverCreated } from './JustCreated';
import { ResourcesFields, resourceProblems, resourceSpecOf, type ResourceDraft } from './ResourcesFields';
import { SecretsEditor, secretProblems, secretsBody, type SecretDraft } from './SecretsEditor';
import { putTags, TagsFields } from './TagsFields';
import { uploadSource } from './upload';

const SOURCES = [
  ['repohost', 'A repository of an integration (built here)'],
  ['upload', 'An uploaded source tarball (built here)'],
  ['external_container', 'An image, run by a listener in your cluster'],
  ['internal_docker', "Images pushed to Slipway's registry"],
] as const;
type Source = (typeof SOURCES)[number][0];

const NAME = /^[a-z][a-z0-9-]*[a-z0-9]$/;

interface Draft {
  name: string;
  source: Source;
  deploymentType: string;
  integrationId: string;
  repoUrl: string;
  repoRef: string;
  buildOnPush: boolean;
  configPath: string;
  installCommand: string;
  buildCommand: string;
  imageUri: string;
  listenerId: string;
  namespace: string;
}

const EMPTY: Draft = {
  name: '',
  source: 'repohost',
  deploymentType: 'dev',
  integrationId: '',
  repoUrl: '',
  repoRef: '',
  buildOnPush: false,
  configPath: '',
  installCommand: '',
  buildCommand: '',
  imageUri: '',
  listenerId: '',
  namespace: '',
};

const given = (o: Record<string, string | boolean | null | undefined | Record<string, unknown>>) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== '' && v !== null && v !== undefined));

/** The create body for `draft` (uploads: the deployment only; the source follows). */
function createBody(d: Draft, resources: ResourceDraft, secrets: SecretDraft[]) {
  const resource_spec = resourceSpecOf(resources, null);
  const cloud = d.source !== 'external_container';
  const source_config = given({
    deployment_type: cloud ? d.deploymentType : undefined,
    resource_spec: resource_spec ?? undefined,
    ...(d.source === 'repohost'
      ? {
          integration_id: d.integrationId,
          repo_url: d.repoUrl,
          install_command: d.installCommand,
          build_command: d.buildCommand,
        }
      : {}),
    ...(d.source === 'repohost' ? { build_on_push: d.buildOnPush } : {}),
    ...(d.source === 'external_container'
      ? { listener_id: d.listenerId, listener_config: d.namespace ? { k8s_namespace: d.namespace } : undefined }
      : {}),
  });
  const source_revision_config =
    d.source === 'repohost'
      ? given({ repo_ref: d.repoRef, graph_config_path: d.configPath })
      : d.source === 'external_container'
        ? given({ image_uri: d.imageUri })
        : {};
  return { name: d.name, source: d.source, source_config, source_revision_config, secrets: secretsBody(secrets) };
}

/** Integrations, their repositories and the listeners: what the form offers to pick from. */
function useChoices(integrationId: string, repoUrl: string) {
  const api = useApi();
  const integrations = useLoad(
    (signal) => api.get<Envelope<Integration>>('/v1/integrations/repohost', { limit: 100 }, signal),
    [api],
  );
  const repos = useLoad(
    (signal) =>
      integrationId
        ? api.get<Repository[]>(`/v1/integrations/repohost/${integrationId}/repos`, undefined, signal)
        : Promise.resolve([]),
    [api, integrationId],
  );
  const branches = useLoad(
    (signal) =>
      integrationId && repoUrl
        ? api.get<Branch[]>(`/v1/integrations/repohost/${integrationId}/branches`, { repo_url: repoUrl }, signal)
        : Promise.resolve([] as Branch[]),
    [api, integrationId, repoUrl],
  );
  const listeners = useLoad((signal) => api.get<Envelope<Listener>>('/v2/listeners', { limit: 100 }, signal), [api]);
  return {
    integrations: integrations.data?.resources ?? [],
    repos: repos.data ?? [],
    reposError: repos.error,
    branches: branches.data ?? [],
    branchesError: branches.error,
    listeners: listeners.data?.resources ?? [],
  };
}

export function CreateDeploymentPage() {
  const action = useAction();
  const [d, setD] = useState<Draft>(EMPTY);
  const [resources, setResources] = useState<ResourceDraft>({});
  const [secrets, setSecrets] = useState<SecretDraft[]>([]);
  const [tagValueIds, setTagValueIds] = useState<string[]>([]);
  const [file, setFile] = useState<File | null>(null);
  const choices = useChoices(d.integrationId, d.repoUrl);
  const set = (patch: Partial<Draft>) => setD({ ...d, ...patch });
  // The default branch is preselected until another is picked.
  const repoRef = d.repoRef || choices.branches.find((b) => b.is_default)?.name || '';
  const listener = choices.listeners.find((l) => l.id === d.listenerId);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const problems = [...secretProblems(secrets), ...resourceProblems(resources)];
    if (!NAME.test(d.name) || d.name.length < 3 || d.name.length > 63)
      problems.push({
        field: 'name',
        message: 'Lowercase letters, digits and -, 3–63 characters, starting with a letter and not ending with -.',
      });
    if (d.source === 'repohost' && !d.integrationId)
      problems.push({ field: 'source_config.integration_id', message: 'Pick an integration.' });
    if (d.source === 'repohost' && !d.repoUrl)
      problems.push({ field: 'source_config.repo_url', message: 'Pick a repository.' });
    if (d.source === 'upload' && !file)
      problems.push({ field: 'source_tarball', message: 'Choose a .tar.gz of the project.' });
    if (d.source === 'external_container' && !d.imageUri)
      problems.push({ field: 'source_revision_config.image_uri', message: 'Give the image to run.' });
    if (problems.length) return action.fail('Some fields need attention.', problems);
    const deployment = await action.perform(async (call: CallFn, record) => {
      const made = await call<Deployment>('POST', '/v2/deployments', createBody({ ...d, repoRef }, resources, secrets));
      if (tagValueIds.length) await putTags(call, made.id, tagValueIds);
      if (d.source !== 'upload' || !file) return made;
      return uploadSource(call, record, made.id, file, d.configPath);
    });
    if (!deployment) return;
    // The form's work is done: on to the new deployment's page, its first revision's log open there.
    handOverCreated({ deployment, calls: action.recorded() });
    navigate(`/deployments/${deployment.id}`, { log: 'latest' });
  };

  return (
    <>
      <p className="crumbs">
        <a href="#/">Deployments</a> / new
      </p>
      <PageHeading>Create a deployment</PageHeading>
      <form className="form" onSubmit={submit} noValidate>
        <Field
          label="Name"
          name="name"
          action={action}
          hint="Lowercase letters, digits and -; it never changes."
          render={(ids) => <input {...ids} required value={d.name} onChange={(e) => set({ name: e.target.value })} />}
        />
        <SelectField
          label="Source"
          name="source"
          action={action}
          value={d.source}
          options={SOURCES}
          onChange={(source) => set({ source })}
        />
        {d.source !== 'external_container' && (
          <SelectField
            label="Deployment type"
            name="source_config.deployment_type"
            action={action}
            hint="Sets the default resources: dev_free 0.5 CPU / 512 MB, dev 1 CPU / 1024 MB, prod 2 CPU / 2048 MB, 2–10 instances."
            value={d.deploymentType}
            options={DEPLOYMENT_TYPES.map((t) => [t, t] as const)}
            onChange={(deploymentType) => set({ deploymentType })}
          />
        )}
        {d.source === 'repohost' && (
          <>
            <SelectField
              label="Integration"
              name="source_config.integration_id"
              action={action}
              hint={
                choices.integrations.length
                  ? undefined
                  : 'No integrations yet: an admin adds one (POST /v1/integrations/repohost).'
              }
              value={d.integrationId}
              options={[
                ['', 'Pick one'],
                ...choices.integrations.map((i) => [i.id, `${i.name} (${i.provider})`] as const),
              ]}
              onChange={(integrationId) => set({ integrationId, repoUrl: '', repoRef: '' })}
            />
            <SelectField
              label="Repository"
              name="source_config.repo_url"
              action={action}
              hint={choices.reposError ?? undefined}
              value={d.repoUrl}
              disabled={!d.integrationId}
              options={[['', 'Pick one'], ...choices.repos.map((r) => [r.url, `${r.owner}/${r.name}`] as const)]}
              onChange={(repoUrl) => set({ repoUrl, repoRef: '' })}
            />
            <SelectField
              label="Branch"
              name="source_revision_config.repo_ref"
              action={action}
              hint={choices.branchesError ?? 'Builds its newest commit; the default branch is preselected.'}
              value={repoRef}
              disabled={!d.repoUrl}
              options={[
                ['', d.repoUrl ? 'The default branch' : 'Pick a repository first'],
                ...choices.branches.map((b) => [b.name, b.is_default ? `${b.name} (default)` : b.name] as const),
              ]}
              onChange={(ref) => set({ repoRef: ref })}
            />
            <div className="field">
              <label>
                <input
                  type="checkbox"
                  checked={d.buildOnPush}
                  onChange={(e) => set({ buildOnPush: e.target.checked })}
                />{' '}
                Build on push
              </label>
              <span className="hint">
                A push to the branch builds and deploys it, once the host sends the integration's webhook (a local
                integration: once the repository has its push hook).
              </span>
            </div>
            <Field
              label="Install command"
              name="source_config.install_command"
              action={action}
              render={(ids) => (
                <input {...ids} value={d.installCommand} onChange={(e) => set({ installCommand: e.target.value })} />
              )}
            />
            <Field
              label="Build command"
              name="source_config.build_command"
              action={action}
              render={(ids) => (
                <input {...ids} value={d.buildCommand} onChange={(e) => set({ buildCommand: e.target.value })} />
              )}
            />
          </>
        )}
        {d.source === 'upload' && (
          <Field
            label="Source tarball (.tar.gz)"
            name="source_tarball"
            action={action}
            hint="Uploaded to a signed URL, then built."
            render={(ids) => (
              <input
                {...ids}
                type="file"
                accept=".tar.gz,.tgz,application/gzip"
                onChange={(e) => setFile(e.target.files?.[0] ?? null)}
              />
            )}
          />
        )}
        {(d.source === 'repohost' || d.source === 'upload') && (
          <Field
            label="Config file"
            name={
              d.source === 'upload'
                ? 'source_revision_config.langgraph_config_path'
                : 'source_revision_config.graph_config_path'
            }
            action={action}
            hint="Empty: langgraph.json at the root."
            render={(ids) => (
              <input {...ids} value={d.configPath} onChange={(e) => set({ configPath: e.target.value })} />
            )}
          />
        )}
        {d.source === 'external_container' && (
          <>
            <Field
              label="Image"
              name="source_revision_config.image_uri"
              action={action}
              hint="e.g. registry.example/agent:1"
              render={(ids) => (
                <input {...ids} value={d.imageUri} onChange={(e) => set({ imageUri: e.target.value })} />
              )}
            />
            <SelectField
              label="Listener"
              name="source_config.listener_id"
              action={action}
              value={d.listenerId}
              options={[['', 'None'], ...choices.listeners.map((l) => [l.id, l.compute_id] as const)]}
              onChange={(listenerId) =>
                set({
                  listenerId,
                  namespace:
                    choices.listeners.find((l) => l.id === listenerId)?.compute_config?.k8s_namespaces?.[0] ?? '',
                })
              }
            />
            {listener && (
              <Field
                label="Namespace"
                name="source_config.listener_config.k8s_namespace"
                action={action}
                hint={
                  listener.compute_config?.k8s_namespaces
                    ? `One of: ${listener.compute_config.k8s_namespaces.join(', ')}`
                    : 'Any namespace.'
                }
                render={(ids) => (
                  <input {...ids} value={d.namespace} onChange={(e) => set({ namespace: e.target.value })} />
                )}
              />
            )}
          </>
        )}
        <ResourcesFields draft={resources} onChange={setResources} action={action} />
        <SecretsEditor drafts={secrets} onChange={setSecrets} action={action} />
        <TagsFields chosen={tagValueIds} onChange={setTagValueIds} action={action} />
        <div>
          <button type="submit" className="primary" disabled={action.busy}>
            {action.busy ? 'Creating…' : 'Create deployment'}
          </button>
        </div>
        <ActionOutcome action={action} />
      </form>
    </>
  );
}
