import type { Deployment, DeploymentPreview, Envelope, PreviewSettings } from '../api/types';
import { formatTime } from '../phases';
import { ActionOutcome, useAction, useConfirm } from './ApiCall';
import { ErrorText, short, StatusBadge, useApi, useLoad } from './common';
import { useLiveRefresh } from './live';

const UNITS: Array<[Intl.RelativeTimeFormatUnit, number]> = [
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
];

/** "expires in 2 days", "expired 3 hours ago": when a preview is torn down, in words (the exact time goes in a title). */
export function expiryText(iso: string | null, now = Date.now()): string {
  if (!iso) return 'no expiry';
  const ms = Date.parse(iso) - now;
  if (Number.isNaN(ms)) return `expires ${iso}`;
  if (Math.abs(ms) < 60_000) return ms > 0 ? 'expires in less than a minute' : 'expired just now';
  const [unit, size] = UNITS.find(([, size]) => Math.abs(ms) >= size) ?? UNITS[UNITS.length - 1]!;
  const text = new Intl.RelativeTimeFormat('en', { numeric: 'always' }).format(Math.round(ms / size), unit);
  return ms > 0 ? `expires ${text}` : `expired ${text}`;
}

function Expiry({ iso }: { iso: string | null }) {
  if (!iso) return <>no expiry</>;
  return (
    <time dateTime={iso} title={formatTime(iso)}>
      {expiryText(iso)}
    </time>
  );
}

/** The pull request's number, linked to it on the forge when the preview was opened with its URL. */
function PullRequestNumber({ pullRequest }: { pullRequest: DeploymentPreview['pull_request'] }) {
  return pullRequest.url ? <a href={pullRequest.url}>#{pullRequest.number}</a> : <>#{pullRequest.number}</>;
}

const previewSettings = (deployment: Deployment) =>
  (deployment.source_config?.previews ?? null) as PreviewSettings | null;
const isRepohost = (deployment: Deployment) => deployment.source === 'repohost' || deployment.source === 'github';

/** Keeps the list current: its previews' own events, and previews opened or ended for this parent. */
function PreviewsLive({
  parentId,
  previewIds,
  reload,
}: {
  parentId: string;
  previewIds: string[];
  reload: () => void;
}) {
  useLiveRefresh(
    reload,
    (e) =>
      (e.type.startsWith('preview.') && e.data?.parent_id === parentId) ||
      (!!e.deployment_id && previewIds.includes(e.deployment_id)),
  );
  return null;
}

function PreviewCard({ preview, busy, onTearDown }: { preview: Deployment; busy: boolean; onTearDown: () => void }) {
  const pr = preview.preview!.pull_request;
  const sha = preview.source_revision_config?.repo_commit_sha;
  const commit = typeof sha === 'string' && sha ? sha : null;
  const deleting = preview.status === 'AWAITING_DELETE';
  return (
    <li className="card" data-number={pr.number} data-deployment-id={preview.id}>
      <div className="card-head">
        <h3>
          Pull request <PullRequestNumber pullRequest={pr} />
        </h3>
        <StatusBadge status={preview.status} label={`Status of the preview of #${pr.number}`} />
        <a href={`#/deployments/${preview.id}`}>{preview.name}</a>
        <button
          type="button"
          className="danger"
          aria-label={`Tear down the preview of pull request #${pr.number}`}
          disabled={busy || deleting}
          onClick={onTearDown}
        >
          Tear down
        </button>
      </div>
      <dl className="config">
        <div>
          <dt>Branch</dt>
          <dd>
            <code>{pr.head_ref}</code>
          </dd>
        </div>
        <div>
          <dt>Commit</dt>
          <dd>{commit ? <code title={commit}>{commit.slice(0, 7)}</code> : '—'}</dd>
        </div>
        <div>
          <dt>URL</dt>
          <dd>
            {preview.url ? (
              <a className="url" href={preview.url}>
                {preview.url}
              </a>
            ) : (
              'none yet'
            )}
          </dd>
        </div>
        <div>
          <dt>Expiry</dt>
          <dd>{deleting ? 'being torn down' : <Expiry iso={preview.preview!.expires_at} />}</dd>
        </div>
      </dl>
    </li>
  );
}

function Previews({ deployment }: { deployment: Deployment }) {
  const api = useApi();
  const previews = useLoad(
    (signal) => api.get<Envelope<Deployment>>(`/v2/deployments/${deployment.id}/previews`, undefined, signal),
    [api, deployment.id],
  );
  // Tear down: one action of the section, its error (the API's detail) and API call shown under the list.
  const action = useAction();
  const [confirm, ask] = useConfirm();
  const settings = previewSettings(deployment);
  const enabled = settings?.enabled === true;
  const list = (previews.data?.resources ?? []).filter((p) => p.preview);
  const { reload } = previews;
  // Previews off and none left (or a server without previews): nothing to show.
  if (!enabled && !list.length) return null;

  const tearDown = (p: Deployment) => {
    const number = p.preview!.pull_request.number;
    ask(
      `Tear down the preview of pull request #${number} (${p.name})? Its deployment, database and Redis keys are deleted; opening the pull request's preview again makes a new one.`,
      'Tear down preview',
      () =>
        action.perform((call) => call('DELETE', `/v2/deployments/${deployment.id}/previews/${number}`)).then(reload),
    );
  };

  return (
    <section aria-labelledby="previews-title">
      <h2 id="previews-title">Previews</h2>
      <PreviewsLive parentId={deployment.id} previewIds={list.map((p) => p.id)} reload={reload} />
      <p className="hint">
        A deployment of its own per pull request, built from its head, with its own URL and database
        {enabled
          ? `; each is torn down ${settings?.ttl_hours ?? 72} hours after its last rollout, and at most ${settings?.max_active ?? 5} run at once.`
          : '. Previews are turned off for this deployment: no new one can be opened, and these stay until torn down or expired.'}
      </p>
      <ErrorText error={previews.error} />
      {previews.data && !list.length && (
        <p className="empty-state">
          No previews yet. Open one for a pull request with <code>POST /v2/deployments/{deployment.id}/previews</code>{' '}
          and a body such as <code>{'{"ref": "<branch>", "number": 7}'}</code>.
        </p>
      )}
      {list.length > 0 && (
        <ul className="cards" aria-label="Previews of pull requests">
          {list.map((p) => (
            <PreviewCard key={p.id} preview={p} busy={action.busy} onTearDown={() => tearDown(p)} />
          ))}
        </ul>
      )}
      <ActionOutcome action={action} />
      {confirm}
    </section>
  );
}

/**
 * A parent's previews per pull request (docs/api.md, Previews): each with its number (linked to
 * the pull request), branch, commit, status, URL, expiry and page, and a confirmed Tear down.
 * Shown where previews are turned on, or where some are left; nothing for other deployments.
 */
export function PreviewsSection({ deployment }: { deployment: Deployment }) {
  if (deployment.is_preview || !isRepohost(deployment)) return null;
  return <Previews key={deployment.id} deployment={deployment} />;
}

function PreviewLine({ preview }: { preview: DeploymentPreview }) {
  const api = useApi();
  const parentId = preview.parent_id;
  const parent = useLoad(
    (signal) =>
      parentId ? api.get<Deployment>(`/v2/deployments/${parentId}`, undefined, signal) : Promise.resolve(null),
    [api, parentId],
  );
  const parentName = parent.data?.name ?? (parent.error ? `deployment ${short(parentId)}` : 'its parent deployment');
  return (
    <p className="preview-of">
      Preview of pull request <PullRequestNumber pullRequest={preview.pull_request} /> of{' '}
      {parentId ? <a href={`#/deployments/${parentId}`}>{parentName}</a> : 'a deployment that no longer exists'}
      {preview.expires_at && (
        <>
          {' '}
          (<Expiry iso={preview.expires_at} />)
        </>
      )}
      .
    </p>
  );
}

/** On a preview's own page: which pull request it previews, and a link back to its parent. */
export function PreviewOf({ deployment }: { deployment: Deployment }) {
  if (!deployment.is_preview || !deployment.preview) return null;
  return <PreviewLine key={deployment.preview.parent_id ?? ''} preview={deployment.preview} />;
}
