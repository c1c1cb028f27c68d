import { useEffect, useRef, useState } from 'react';
import type { Api } from '../api/client';
import type { Deployment, Envelope, WorkspaceEvent } from '../api/types';

/** How many deployments the first look-up reads at once; others are asked for one by one. */
const FIRST_PAGE = 100;

/**
 * Names for the deployments `events` mention: an event's own `data.name` first (a created or
 * deleted deployment's events carry it), then one page of the workspace's deployments, then each
 * id still unnamed on its own (a deleted one stays unnamed: its id is shown).
 */
export function useDeploymentNames(api: Api, events: WorkspaceEvent[]): Map<string, string> {
  const known = useRef(new Map<string, string>());
  const [, setVersion] = useState(0);
  const asked = useRef(new Set<string>());
  const listed = useRef<Promise<void> | null>(null);

  const fromEvents = new Map<string, string>();
  for (const e of events)
    if (e.deployment_id && typeof e.data?.name === 'string') fromEvents.set(e.deployment_id, e.data.name);
  const ids = [...new Set(events.map((e) => e.deployment_id).filter((id): id is string => !!id))];
  const missing = ids.filter((id) => !fromEvents.has(id) && !known.current.has(id) && !asked.current.has(id));
  const key = missing.join(',');

  useEffect(() => {
    if (!missing.length) return;
    missing.forEach((id) => asked.current.add(id));
    const learn = (found: Array<Pick<Deployment, 'id' | 'name'>>) => {
      found.forEach((d) => known.current.set(d.id, d.name));
      if (found.length) setVersion((v) => v + 1);
    };
    void (async () => {
      listed.current ??= api
        .get<Envelope<Deployment>>('/v2/deployments', { limit: FIRST_PAGE })
        .then((page) => learn(page.resources))
        .catch(() => undefined);
      await listed.current;
      const still = missing.filter((id) => !known.current.has(id));
      const found = await Promise.all(
        still.map((id) => api.get<Deployment>(`/v2/deployments/${id}`).catch(() => null)),
      );
      learn(found.filter((d): d is Deployment => !!d));
    })();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [api, key]);

  return new Map([...known.current, ...fromEvents]);
}
