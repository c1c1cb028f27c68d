import { useRef, useState, type FormEvent } from 'react';
import { Api, ApiError, type Session } from '../api/client';
import type { Envelope, Workspace } from '../api/types';
import { ErrorText } from './common';

/**
 * Asks for the API key once per browser tab (kept in sessionStorage only). An organization-scoped
 * key also needs the workspace it acts on; the API says so, and the form asks for it.
 */
export function SignIn({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const [error, setError] = useState<string | null>(null);
  /** Null until the key turns out to be organization-scoped; then the workspaces it may pick (empty if they cannot be listed). */
  const [workspaces, setWorkspaces] = useState<Workspace[] | null>(null);
  const [busy, setBusy] = useState(false);
  const workspaceRef = useRef<HTMLInputElement & HTMLSelectElement>(null);
  /** A workspace named by the address (the deploy CLI's status link carries it), preselected. */
  const named = new URLSearchParams(location.hash.split('?')[1] ?? '').get('workspace') ?? undefined;

  const submit = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const session: Session = {
      key: String(form.get('key') ?? '').trim(),
      tenantId: String(form.get('workspace') ?? '').trim() || null,
    };
    if (!session.key) {
      setError('Enter an API key.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      // Any authenticated read tells whether the key (and workspace) are accepted.
      await new Api(session).get('/v2/deployments', { limit: 1 });
      onSignedIn(session);
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
      if (err instanceof ApiError && err.needsWorkspace) {
        const listed = await new Api({ key: session.key, tenantId: null })
          .get<Envelope<Workspace>>('/v2/workspaces', { limit: 100 })
          .then((page) => page.resources)
          .catch(() => []);
        setWorkspaces(listed);
        setTimeout(() => workspaceRef.current?.focus(), 0);
      }
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main" className="signin">
      <h1>Slipway console</h1>
      <form onSubmit={submit} aria-describedby="signin-help">
        <p id="signin-help">
          Sign in with an API key. It is kept in this tab only (session storage) and sent with each request as a header.
        </p>
        <label htmlFor="key">API key</label>
        <input id="key" name="key" type="password" autoComplete="off" spellCheck={false} required autoFocus />
        {workspaces && (
          <>
            <label htmlFor="workspace">Workspace</label>
            {workspaces.length ? (
              <select
                id="workspace"
                name="workspace"
                ref={workspaceRef}
                aria-describedby="workspace-help"
                defaultValue={named}
                required
              >
                {workspaces.map((w) => (
                  <option key={w.id} value={w.id}>
                    {w.name} ({w.id})
                  </option>
                ))}
              </select>
            ) : (
              <input
                id="workspace"
                name="workspace"
                ref={workspaceRef}
                spellCheck={false}
                aria-describedby="workspace-help"
                defaultValue={named}
                required
              />
            )}
            <p id="workspace-help" className="hint">
              This key belongs to an organization: pick the workspace to work in{workspaces.length ? '' : ' (its ID)'}.
            </p>
          </>
        )}
        <ErrorText error={error} />
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
