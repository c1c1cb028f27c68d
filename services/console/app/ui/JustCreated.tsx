import { useEffect, useState } from 'react';
import type { Deployment, Revision } from '../api/types';
import { CallShown, type ApiCall } from './ApiCall';
import { short } from './common';
import { defaultLogType, isServing, LogView } from './LogView';

/**
 * The create form hands its outcome to the new deployment's page (the form goes away once the
 * deployment exists): what was created and the API calls it took, shown there once.
 */
interface Created {
  deployment: Deployment;
  calls: ApiCall[];
}

let handedOver: Created | null = null;

export function handOverCreated(created: Created): void {
  handedOver = created;
}

/** The creation of `deploymentId`, if the form just made it. */
const createdNow = (deploymentId: string): Created | null =>
  handedOver?.deployment.id === deploymentId ? handedOver : null;

/** "Created …": the notice and the create form's calls as curl, on the new deployment's page. */
export function CreatedNotice({ deploymentId }: { deploymentId: string }) {
  const [created] = useState(() => createdNow(deploymentId));
  // Shown once: coming back to the page (or a reload) shows no notice.
  useEffect(() => {
    if (created && handedOver === created) handedOver = null;
  }, [created]);
  if (!created) return null;
  const { deployment, calls } = created;
  return (
    <div className="outcome">
      <p className="notice" role="status">
        Created {deployment.name}
        {deployment.latest_revision_id
          ? `: revision ${deployment.latest_revision_id} is on its way; its log follows below.`
          : ': push an image to roll out its first revision.'}
      </p>
      {calls.map((c, i) => (
        <CallShown key={i} call={c} />
      ))}
    </div>
  );
}

/**
 * The latest revision's log, followed live on the deployment's page (`?log=latest`, where the
 * create form leads): its build log, or its deploy log once it rolls out or when nothing is
 * built (an image run as it is).
 */
export function LatestLog({ deployment, latest }: { deployment: Deployment; latest: Revision }) {
  const build = deployment.source !== 'external_container' && deployment.source !== 'internal_docker';
  const type = build ? defaultLogType(latest, deployment.active_revision_id) : 'deploy';
  return (
    <section aria-labelledby="latest-log-title">
      <h2 id="latest-log-title">Log of revision {short(latest.id)}</h2>
      <p className="hint">
        <a href={`#/deployments/${deployment.id}/revisions/${latest.id}/logs?type=${type}`}>Open in the log view</a>
      </p>
      <LogView
        key={latest.id}
        deploymentId={deployment.id}
        revisionId={latest.id}
        status={latest.status}
        serving={isServing(latest, deployment.active_revision_id)}
        initialType={type}
      />
    </section>
  );
}
