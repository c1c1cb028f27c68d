import type { Deployment, Revision } from '../api/types';
import { ErrorText, PageHeading, short, StatusBadge, useApi, useLoad } from './common';
import { useLiveRefresh } from './live';
import { defaultLogType, isServing, LogView } from './LogView';

/**
 * A revision's log on a page of its own. `query` may preselect `type` and `level`; without a
 * `type`, the serving revision opens on its deploy (runtime) log, any other on its build log.
 */
export function LogsPage({
  deploymentId,
  revisionId,
  query,
}: {
  deploymentId: string;
  revisionId: string;
  query?: URLSearchParams;
}) {
  const api = useApi();
  const info = useLoad(
    async (signal) => {
      const [deployment, revision] = await Promise.all([
        api.get<Deployment>(`/v2/deployments/${deploymentId}`, undefined, signal),
        api.get<Revision>(`/v2/deployments/${deploymentId}/revisions/${revisionId}`, undefined, signal),
      ]);
      return { deployment, revision };
    },
    [api, deploymentId, revisionId],
  );
  useLiveRefresh(info.reload, (e) => e.revision_id === revisionId);
  const asked = query?.get('type');
  const status = info.data?.revision.status;
  const active = info.data?.deployment.active_revision_id ?? null;
  // The active revision runs on after its rollout: its instances' output keeps coming.
  const serving = !!info.data && isServing(info.data.revision, active);
  return (
    <>
      <p className="crumbs">
        <a href="#/">Deployments</a> /{' '}
        <a href={`#/deployments/${deploymentId}`}>{info.data?.deployment.name ?? short(deploymentId)}</a> / logs of{' '}
        <code>{short(revisionId)}</code>
      </p>
      <PageHeading>Logs of revision {short(revisionId)}</PageHeading>
      <p>
        Revision status: <StatusBadge status={status} />
      </p>
      <ErrorText error={info.error} />
      {info.data || info.error ? (
        <LogView
          deploymentId={deploymentId}
          revisionId={revisionId}
          status={status}
          serving={serving}
          initialType={
            asked === 'deploy' || asked === 'build'
              ? asked
              : info.data
                ? defaultLogType(info.data.revision, active)
                : 'build'
          }
          initialLevel={query?.get('level') ?? ''}
        />
      ) : (
        <p role="status">Loading…</p>
      )}
    </>
  );
}
