import { useState, type FormEvent } from 'react';
import { agentCredential, setAgentCredential } from './agent';

/**
 * The credential a graph with its own auth handler expects (docs/console.md, Agent): kept in this
 * tab only (sessionStorage, as the API key is), sent to the agent as its `Authorization`. Agents
 * without one need nothing here: your API key is what the deployment checks.
 */
export function AgentCredential({ deploymentId, onChange }: { deploymentId: string; onChange: () => void }) {
  const [value, setValue] = useState(agentCredential(deploymentId) ?? '');
  const [saved, setSaved] = useState<string | null>(null);
  const save = (e: FormEvent) => {
    e.preventDefault();
    setAgentCredential(deploymentId, value.trim());
    setSaved(value.trim() ? 'Sent with every call to this agent from this tab.' : 'Forgotten.');
    onChange();
  };
  return (
    <details className="agent-credential">
      <summary>The agent's own authentication</summary>
      <form onSubmit={save}>
        <p className="hint">
          If this agent's graph has its own auth handler, give the credential it expects (for example{' '}
          <code>Bearer …</code>): it is sent as the agent's <code>Authorization</code>, kept in this tab only.
        </p>
        <label>
          Credential
          <input type="password" autoComplete="off" value={value} onChange={(e) => setValue(e.target.value)} />
        </label>
        <button type="submit" className="secondary">
          Use it
        </button>
        <span role="status">{saved}</span>
      </form>
    </details>
  );
}
