/**
 * What the Agent views share: their addresses, and the client of a deployment's agent, reached
 * through the api (`/v2/deployments/{id}/agent/…`) with the signed-in user's key.
 */
import { useMemo } from 'react';
import { AgentApi, type ThreadStatus } from '../../api/agent';
import { useApi } from '../common';

/** The deployment page's Agent tab, with its thread filters (empty values left out). */
export function agentHref(deploymentId: string, query: Record<string, string | number> = {}): string {
  const params = new URLSearchParams(
    Object.entries<string | number>({ tab: 'agent', ...query })
      .filter(([, v]) => v !== '' && v !== 0)
      .map(([k, v]) => [k, String(v)]),
  );
  return `#/deployments/${deploymentId}?${params}`;
}

/** One thread of a deployment's agent. */
export const threadPageHref = (deploymentId: string, threadId: string) =>
  `#/deployments/${deploymentId}/threads/${encodeURIComponent(threadId)}`;

/** Where the agent credential the user gave for a deployment is kept: this tab's sessionStorage, as the key is. */
const credentialSlot = (deploymentId: string) => `slipway.agent-credential.${deploymentId}`;

/** The credential the user gave for a deployment's own auth handler, or null. */
export function agentCredential(deploymentId: string): string | null {
  try {
    return sessionStorage.getItem(credentialSlot(deploymentId));
  } catch {
    return null;
  }
}

/** Keeps (or, empty, forgets) the credential for a deployment's own auth handler. */
export function setAgentCredential(deploymentId: string, value: string): void {
  try {
    if (value) sessionStorage.setItem(credentialSlot(deploymentId), value);
    else sessionStorage.removeItem(credentialSlot(deploymentId));
  } catch {
    // Storage refused (private mode): the credential lasts as long as the page.
  }
}

/** The client of a deployment's agent, or null when it has none to call (`served` false: no URL yet). */
export function useAgentApi(
  deploymentId: string | null | undefined,
  served: boolean,
  credentialVersion = 0,
): AgentApi | null {
  const api = useApi();
  return useMemo(
    () =>
      deploymentId && served
        ? new AgentApi(
            `${api.base}/v2/deployments/${deploymentId}/agent`,
            api.session.key,
            agentCredential(deploymentId),
          )
        : null,
    // credentialVersion: a new credential given makes a new client.
    [api.base, deploymentId, served, api.session.key, credentialVersion],
  );
}

/** The statuses a thread has, in the words the list shows. */
export const THREAD_STATUSES: ReadonlyArray<readonly [ThreadStatus | '', string]> = [
  ['', 'any'],
  ['idle', 'idle'],
  ['busy', 'busy'],
  ['interrupted', 'interrupted (waiting for a human)'],
  ['error', 'error'],
];

/** A status badge for a thread or an agent run. */
export function threadBadgeKind(status: string): string {
  if (status === 'idle' || status === 'success') return 'ok';
  if (status === 'error' || status === 'timeout') return 'failed';
  if (['interrupted', 'busy', 'pending', 'running'].includes(status)) return 'progress';
  return 'ended';
}

/** A value, pretty-printed (none for nothing). */
export const jsonText = (value: unknown) =>
  value === undefined || value === null ? 'none' : JSON.stringify(value, null, 2);
