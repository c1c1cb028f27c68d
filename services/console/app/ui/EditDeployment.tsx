import { useState, type FormEvent } from 'react';
import type { Deployment } from '../api/types';
import { ActionOutcome, Field, useAction } from './ApiCall';
import { BuildOnPushField, isRepohost } from './DeployFromRepository';
import {
  ResourcesFields,
  resourceDraftOf,
  resourceProblems,
  resourceSpecOf,
  type ResourceDraft,
} from './ResourcesFields';
import { draftsOf, SecretsEditor, secretProblems, secretsBody, type SecretDraft } from './SecretsEditor';
import { putTags, TagsFields, tagsChanged } from './TagsFields';
import { uploadSource } from './upload';

/** The fields of `source_revision_config` and `source_config` a PATCH may change, per source. */
const REVISION_FIELDS: Record<string, Array<[string, string]>> = {
  repohost: [
    ['repo_ref', 'Git ref'],
    ['graph_config_path', 'Config file'],
  ],
  external_container: [['image_uri', 'Image']],
};
const IN_PLACE_FIELDS: Record<string, Array<[string, string]>> = {
  repohost: [
    ['install_command', 'Install command'],
    ['build_command', 'Build command'],
  ],
};

const text = (v: unknown) => (v === null || v === undefined ? '' : String(v));
const sameSecrets = (drafts: SecretDraft[], stored: Deployment['secrets']) =>
  drafts.every((d) => d.stored && !d.removed && !d.value) && drafts.length === (stored ?? []).length;

/**
 * Changes a deployment with one PATCH: configuration, resources and secrets (write-only). The
 * server makes a new revision when the body carries secrets, a revision field or resources;
 * commands change in place. An upload deployment takes a new tarball instead. Tags are set with
 * a PUT of their own (in place, no new revision).
 */
export function EditDeployment({ deployment, onDone }: { deployment: Deployment; onDone: (message: string) => void }) {
  const action = useAction();
  const source =
    deployment.source === 'github'
      ? 'repohost'
      : deployment.source === 'internal_source'
        ? 'upload'
        : deployment.source === 'external_docker'
          ? 'external_container'
          : deployment.source;
  const initial = {
    revision: Object.fromEntries(
      (REVISION_FIELDS[source] ?? []).map(([k]) => [k, text(deployment.source_revision_config?.[k])]),
    ),
    inPlace: Object.fromEntries((IN_PLACE_FIELDS[source] ?? []).map(([k]) => [k, text(deployment.source_config?.[k])])),
    resources: resourceDraftOf(deployment.source_config?.resource_spec ?? null),
  };
  const [revision, setRevision] = useState(initial.revision);
  const [inPlace, setInPlace] = useState(initial.inPlace);
  const [resources, setResources] = useState<ResourceDraft>(initial.resources);
  const [secrets, setSecrets] = useState<SecretDraft[]>(() => draftsOf(deployment.secrets ?? []));
  const [tagValueIds, setTagValueIds] = useState<string[]>(deployment.tag_value_ids ?? []);
  const [file, setFile] = useState<File | null>(null);
  const [configPath, setConfigPath] = useState('');
  const storedBuildOnPush = deployment.source_config?.build_on_push === true;
  const [buildOnPush, setBuildOnPush] = useState(storedBuildOnPush);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const problems = [...secretProblems(secrets), ...resourceProblems(resources)];
    if (problems.length) return action.fail('Some fields need attention.', problems);
    const body: Record<string, unknown> = {};
    const changedRevision = Object.fromEntries(
      Object.entries(revision).filter(([k, v]) => v !== initial.revision[k] && v !== ''),
    );
    if (Object.keys(changedRevision).length) body.source_revision_config = changedRevision;
    const sourceConfig: Record<string, unknown> = Object.fromEntries(
      Object.entries(inPlace)
        .filter(([k, v]) => v !== initial.inPlace[k])
        .map(([k, v]) => [k, v || null]),
    );
    if (buildOnPush !== storedBuildOnPush) sourceConfig.build_on_push = buildOnPush;
    if (JSON.stringify(resources) !== JSON.stringify(initial.resources))
      sourceConfig.resource_spec = resourceSpecOf(
        resources,
        (deployment.source_config?.resource_spec as Record<string, unknown>) ?? {},
      );
    if (Object.keys(sourceConfig).length) body.source_config = sourceConfig;
    if (!sameSecrets(secrets, deployment.secrets)) body.secrets = secretsBody(secrets);
    const retag = tagsChanged(tagValueIds, deployment.tag_value_ids ?? []);
    if (!Object.keys(body).length && !file && !retag) return action.fail('Nothing changed.');
    const updated = await action.perform(async (call, record) => {
      let d = Object.keys(body).length
        ? await call<Deployment>('PATCH', `/v2/deployments/${deployment.id}`, body)
        : deployment;
      if (file) d = await uploadSource(call, record, deployment.id, file, configPath);
      // Tags last (they change in place): a PATCH the API refuses leaves everything as it was.
      if (retag) await putTags(call, deployment.id, tagValueIds);
      return d;
    });
    if (!updated) return;
    setSecrets(draftsOf(updated.secrets ?? []));
    onDone(
      updated.latest_revision_id && updated.latest_revision_id !== deployment.latest_revision_id
        ? `Saved: revision ${updated.latest_revision_id} rolls out the change.`
        : 'Saved: changed in place, no new revision.',
    );
  };

  return (
    // Folded until wanted: the page is for watching first.
    <details className="edit">
      <summary>
        <h2 id="edit-title">Edit configuration, resources and secrets</h2>
      </summary>
      <form className="form" onSubmit={submit} noValidate aria-labelledby="edit-title">
        {(REVISION_FIELDS[source] ?? []).map(([k, label]) => (
          <Field
            key={k}
            label={label}
            name={`source_revision_config.${k}`}
            action={action}
            render={(ids) => (
              <input
                {...ids}
                value={revision[k] ?? ''}
                onChange={(e) => setRevision({ ...revision, [k]: e.target.value })}
              />
            )}
          />
        ))}
        {(IN_PLACE_FIELDS[source] ?? []).map(([k, label]) => (
          <Field
            key={k}
            label={label}
            name={`source_config.${k}`}
            action={action}
            hint="Changes in place (the next build uses it)."
            render={(ids) => (
              <input
                {...ids}
                value={inPlace[k] ?? ''}
                onChange={(e) => setInPlace({ ...inPlace, [k]: e.target.value })}
              />
            )}
          />
        ))}
        {isRepohost(deployment) && (
          <BuildOnPushField deployment={deployment} checked={buildOnPush} onChange={setBuildOnPush} />
        )}
        {source === 'upload' && (
          <>
            <Field
              label="New source tarball (.tar.gz)"
              name="source_tarball"
              action={action}
              render={(ids) => (
                <input
                  {...ids}
                  type="file"
                  accept=".tar.gz,.tgz,application/gzip"
                  onChange={(e) => setFile(e.target.files?.[0] ?? null)}
                />
              )}
            />
            <Field
              label="Config file"
              name="source_revision_config.langgraph_config_path"
              action={action}
              hint="Empty: langgraph.json at the root."
              render={(ids) => <input {...ids} value={configPath} onChange={(e) => setConfigPath(e.target.value)} />}
            />
          </>
        )}
        <ResourcesFields draft={resources} onChange={setResources} action={action} />
        <SecretsEditor drafts={secrets} onChange={setSecrets} action={action} />
        <TagsFields chosen={tagValueIds} onChange={setTagValueIds} action={action} />
        <div>
          <button type="submit" className="primary" disabled={action.busy}>
            {action.busy ? 'Saving…' : 'Save and roll out'}
          </button>
        </div>
        <ActionOutcome action={action} />
      </form>
    </details>
  );
}
