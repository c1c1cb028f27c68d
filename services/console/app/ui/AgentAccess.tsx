import { useState } from 'react';
import type { Deployment } from '../api/types';
import { useApi } from './common';

/** The public LangGraph Studio, pointed at a deployment's URL. */
export const studioUrl = (deploymentUrl: string) =>
  `https://smith.langchain.com/studio/?baseUrl=${encodeURIComponent(deploymentUrl)}`;

/**
 * Whether the deployment's URL speaks the LangGraph Server API: only when the API says so
 * (`agent_server: true`, the platform serves its graphs) and it has a URL. `false` (a plain app,
 * an image run as it is, a project whose own start script serves it) and `null` (not known yet:
 * nothing built or rolled out) show no agent panel, Agent tab or Studio link.
 */
export function isAgentDeployment(deployment: Deployment): boolean {
  return !!deployment.url && deployment.agent_server === true;
}

const KEY_VARIABLE = 'SLIPWAY_API_KEY';

/** The SDK and curl calls for `url`, with the key read from the environment unless `key` is given. */
export function sdkSnippet(url: string, key: string | null): string {
  const apiKey = key ? JSON.stringify(key) : `process.env.${KEY_VARIABLE}`;
  const header = key ? key : `$${KEY_VARIABLE}`;
  return [
    `import { Client } from '@langchain/langgraph-sdk';`,
    ``,
    `// apiKey: an API key of this workspace; the SDK sends it as the X-Api-Key header.`,
    `const client = new Client({ apiUrl: ${JSON.stringify(url)}, apiKey: ${apiKey} });`,
    `const assistants = await client.assistants.search();`,
    ``,
    `// Or over HTTP:`,
    `// curl -X POST ${url}/assistants/search -H "X-Api-Key: ${header}" -H 'Content-Type: application/json' -d '{}'`,
  ].join('\n');
}

/** Studio link and a copyable SDK snippet for a deployment served by the agent server. */
export function AgentAccess({ deployment }: { deployment: Deployment & { url: string } }) {
  const api = useApi();
  const [withKey, setWithKey] = useState(false);
  const [copied, setCopied] = useState<string | null>(null);
  const snippet = sdkSnippet(deployment.url, withKey ? api.session.key : null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(snippet);
      setCopied('Copied to the clipboard.');
    } catch {
      setCopied('The browser refused the clipboard: select the text and copy it.');
    }
  };
  return (
    <section aria-labelledby="agent-title" className="agent">
      <h2 id="agent-title">Use this agent</h2>
      <p>
        <a href={studioUrl(deployment.url)} target="_blank" rel="noreferrer">
          Open in LangGraph Studio
        </a>{' '}
        <span className="hint">(the public Studio, talking to this deployment's URL from your browser)</span>
      </p>
      <p className="hint">
        Calls need an API key of this workspace in <code>X-Api-Key</code> (<code>apiKey</code> in the SDK). The snippet
        reads it from <code>{KEY_VARIABLE}</code>.
      </p>
      <pre className="snippet" aria-label="SDK snippet">
        <code>{snippet}</code>
      </pre>
      <div className="actions">
        <button type="button" className="secondary" onClick={copy}>
          Copy snippet
        </button>
        <label>
          <input type="checkbox" checked={withKey} onChange={(e) => setWithKey(e.target.checked)} /> Put my key in the
          snippet
        </label>
        <span role="status">{copied}</span>
      </div>
    </section>
  );
}
