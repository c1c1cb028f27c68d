import { isIP } from 'node:net';

/** A DNS name of at least two labels, each 1-63 letters, digits or inner hyphens, the last not all digits. */
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * The host a custom domain names, as stored and compared: lower case, without scheme, port,
 * path or a trailing dot (`https://Agent.Example.com:443/x` → `agent.example.com`); null when it
 * is no DNS name (an IP address, one label, a bad label).
 */
export function domainHost(input: string): string | null {
  let text = input.trim().toLowerCase();
  if (/^[a-z][a-z0-9+.-]*:\/\//.test(text)) {
    try {
      text = new URL(text).hostname;
    } catch {
      return null;
    }
  } else {
    text = text.split(/[/?#]/, 1)[0]!.replace(/:\d*$/, '');
  }
  if (text.endsWith('.')) text = text.slice(0, -1);
  if (!text || text.length > 253 || isIP(text) || text.startsWith('[')) return null;
  const labels = text.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l)) || /^\d+$/.test(labels.at(-1)!)) return null;
  return text;
}

/**
 * Why a host may not be a custom domain, or null: names under the apps domain belong to the
 * deployments' own names, `localhost` names are the machine's, and the api's own host is the
 * control plane's. Nobody can claim them, whatever the workspace.
 */
export function reservedHostReason(host: string, appsDomain: string, reserved: readonly string[]): string | null {
  if (host === 'localhost' || host.endsWith('.localhost')) return `'${host}' is a name of the machine itself`;
  if (host === appsDomain || host.endsWith(`.${appsDomain}`))
    return `'${host}' is under the apps domain (${appsDomain}), where deployments answer by name`;
  if (reserved.includes(host)) return `'${host}' is the control plane's own host`;
  return null;
}
