import { inject } from 'vitest';
import { copyAgentServerHost } from '../../services/builder/src/agent-server-host.js';
import { AgentServerHostInstall } from '../../services/builder/src/host-install.js';

/**
 * The agent server host as a build makes it, for tests that run the host without a builder:
 * copied into `<root>/.slipway-agent-server` (sources compiled) with its dependencies from the
 * builder's own install (AgentServerHostInstall), in the run's shared directory, so the run
 * installs them once between its files. Returns the host's directory.
 */
export async function builtAgentServerHost(root: string): Promise<string> {
  const hostDir = await copyAgentServerHost(root);
  const install = new AgentServerHostInstall({ root: inject('agentServerHostCache'), deadlineMs: 300_000 });
  await install.copyInto(hostDir, { signal: AbortSignal.timeout(300_000), onLine: () => undefined });
  return hostDir;
}
