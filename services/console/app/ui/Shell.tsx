import type { ReactNode } from 'react';
import type { Envelope, Workspace } from '../api/types';
import { useApi, useLoad } from './common';
import { ThemeToggle } from './theme';

/** The sidebar's pages, in groups; the label is each link's accessible name (tests find them by it). */
const NAV: Array<{
  group: string;
  pages: Array<{ path: string; label: string; current: (route: string) => boolean }>;
}> = [
  {
    group: 'Deploy',
    pages: [
      {
        path: '/',
        label: 'Deployments',
        current: (route) => route === '/' || route.startsWith('/deployments'),
      },
      { path: '/events', label: 'Events', current: (route) => route === '/events' },
    ],
  },
  {
    group: 'Settings',
    pages: [
      { path: '/listeners', label: 'Listeners and integrations', current: (route) => route === '/listeners' },
      { path: '/webhooks', label: 'Webhooks', current: (route) => route === '/webhooks' },
      { path: '/api-keys', label: 'API keys', current: (route) => route === '/api-keys' },
      { path: '/workspace', label: 'Tags and quotas', current: (route) => route === '/workspace' },
    ],
  },
];

/**
 * The workspace the console acts in, by name: the one picked at sign-in (an organization key),
 * else the key's own (`GET /v2/workspaces` lists just that one for a workspace key). Null while
 * unknown or unreadable: the sidebar then says "this key's workspace" rather than an error.
 */
function useWorkspaceName(): string | null {
  const api = useApi();
  const listed = useLoad((signal) => api.get<Envelope<Workspace>>('/v2/workspaces', { limit: 100 }, signal), [api]);
  const workspaces = listed.data?.resources ?? [];
  const tenantId = api.session.tenantId;
  return (tenantId ? workspaces.find((w) => w.id === tenantId) : workspaces[0])?.name ?? null;
}

/** The signed-in frame: a sidebar (the workspace, the pages, theme and sign-out), then the page. */
export function Shell({ route, onSignOut, children }: { route: string; onSignOut: () => void; children: ReactNode }) {
  const api = useApi();
  const name = useWorkspaceName();
  return (
    <div className="shell">
      <a className="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById('main')?.focus())}>
        Skip to content
      </a>
      <header className="sidebar">
        <span className="brand">
          <img src="./favicon.svg" alt="" />
          Slipway
        </span>
        <p className="workspace" title={api.session.tenantId ? `Workspace ${api.session.tenantId}` : undefined}>
          <span className="workspace-label">Workspace</span>
          <span className="workspace-name">
            {name ?? (api.session.tenantId ? 'Workspace' : "This key's workspace")}
          </span>
        </p>
        <nav aria-label="Main">
          {NAV.map(({ group, pages }) => (
            <div key={group} className="nav-section">
              <p className="nav-group" aria-hidden="true">
                {group}
              </p>
              {pages.map((p) => (
                <a key={p.path} href={`#${p.path}`} aria-current={p.current(route) ? 'page' : undefined}>
                  {p.label}
                </a>
              ))}
            </div>
          ))}
        </nav>
        <div className="sidebar-foot">
          <ThemeToggle />
          <button type="button" className="secondary" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}
