import { FAILED_REVISION_STATUSES, type Revision } from '../../api/types';
import { short } from '../common';

/** What a revision runs: the fields that make two revisions differ. */
function fingerprint(r: Revision): Array<[string, string]> {
  const c = r.source_revision_config ?? {};
  return [
    ['Commit', c.repo_commit_sha ?? '—'],
    ['Ref', c.repo_ref ?? '—'],
    // The image asked for (image sources); a built revision's own artifact URI differs every time.
    ['Image', c.image_uri ?? '—'],
    ['Resources', JSON.stringify(r.resource_spec ?? {})],
    [
      'Secrets',
      (r.secrets ?? [])
        .map((s) => s.name)
        .sort()
        .join(', ') || '—',
    ],
  ];
}

/** The first line of a failure message: what went wrong, without the quoted log tail. */
const headline = (message: string | null) =>
  (message ?? 'No reason recorded.').split('\n')[0]!.replace(/ Last log lines:$/, '');

/**
 * The active revision (what serves) against the latest (what was asked for last): which of
 * commit, ref, image, resources and secrets differ, and when the latest failed, one readable
 * line saying why with a link to its error lines.
 */
export function RevisionCompare({
  deploymentId,
  active,
  latest,
}: {
  deploymentId: string;
  active: Revision | null;
  latest: Revision | null;
}) {
  const failed = latest && FAILED_REVISION_STATUSES.includes(latest.status) ? latest : null;
  const logType = failed?.status === 'BUILD_FAILED' ? 'build' : 'deploy';
  const same = !latest || !active || latest.id === active.id;
  const rows = !same ? fingerprint(active!).map(([k, v], i) => [k, v, fingerprint(latest!)[i]![1]] as const) : [];
  return (
    <div className="revision-compare">
      {failed && (
        <p className="failure" role="alert" aria-label="Latest revision failed">
          Revision <code>{short(failed.id)}</code> {failed.status.toLowerCase().replace(/_/g, ' ')}:{' '}
          {headline(failed.status_message)}{' '}
          <a href={`#/deployments/${deploymentId}/revisions/${failed.id}/logs?type=${logType}&level=error`}>
            See the failing log lines
          </a>
          {active ? ` — revision ${short(active.id)} keeps serving.` : null}
        </p>
      )}
      {same ? (
        <p>{active ? 'The latest revision is the one serving.' : 'No revision serves yet.'}</p>
      ) : (
        <table aria-label="Active and latest revision">
          <thead>
            <tr>
              <th scope="col" />
              <th scope="col">Active {active ? short(active.id) : ''}</th>
              <th scope="col">Latest {latest ? short(latest.id) : ''}</th>
            </tr>
          </thead>
          <tbody>
            {rows.map(([k, a, b]) => (
              <tr key={k} className={a !== b ? 'differs' : undefined}>
                <th scope="row">{k}</th>
                <td>{a}</td>
                <td>
                  {b}
                  {a !== b ? <span className="differs-mark"> (differs)</span> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
