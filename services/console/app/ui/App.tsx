import { useMemo, useState } from 'react';
import { Api, sessionStore, type Session } from '../api/client';
import { ApiContext, useHashRoute } from './common';
import { DeploymentPage } from './DeploymentPage';
import { DeploymentsPage } from './DeploymentsPage';
import { ApiKeysPage } from './ApiKeysPage';
import { CreateDeploymentPage } from './CreateDeploymentPage';
import { EventsPage } from './EventsPage';
import { ListenersPage } from './ListenersPage';
import { WebhooksPage } from './WebhooksPage';
import { WorkspacePage } from './WorkspacePage';
import { LogsPage } from './LogsPage';
import { SignIn } from './SignIn';
import { ThreadPage } from './agent/ThreadPage';
import { Shell } from './Shell';
import { ThemeToggle } from './theme';

const UUID = '[0-9a-fA-F-]{36}';
const DEPLOYMENT = new RegExp(`^/deployments/(${UUID})$`);
const THREAD = new RegExp(`^/deployments/(${UUID})/threads/([^/?]+)$`);
const LOGS = new RegExp(`^/deployments/(${UUID})/revisions/(${UUID})/logs$`);

export function App() {
  const [session, setSession] = useState<Session | null>(() => sessionStore.load());
  const api = useMemo(() => (session ? new Api(session) : null), [session]);
  const { path: route, query } = useHashRoute();

  if (!api) {
    return (
      <>
        <div className="signin-theme">
          <ThemeToggle />
        </div>
        <SignIn
          onSignedIn={(s) => {
            sessionStore.save(s);
            setSession(s);
          }}
        />
      </>
    );
  }

  const signOut = () => {
    sessionStore.clear();
    setSession(null);
  };
  let page;
  let m: RegExpMatchArray | null;
  if ((m = route.match(LOGS))) page = <LogsPage key={route} deploymentId={m[1]} revisionId={m[2]} query={query} />;
  else if ((m = route.match(THREAD)))
    page = <ThreadPage key={route} deploymentId={m[1]} threadId={decodeURIComponent(m[2]!)} />;
  else if ((m = route.match(DEPLOYMENT))) page = <DeploymentPage key={route} deploymentId={m[1]} />;
  else if (route === '/listeners') page = <ListenersPage />;
  else if (route === '/deployments/new') page = <CreateDeploymentPage />;
  else if (route === '/events') page = <EventsPage key={query.toString()} query={query} />;
  else if (route === '/webhooks') page = <WebhooksPage />;
  else if (route === '/api-keys') page = <ApiKeysPage />;
  else if (route === '/workspace') page = <WorkspacePage />;
  else page = <DeploymentsPage query={query} />;

  return (
    <ApiContext.Provider value={api}>
      <Shell route={route} onSignOut={signOut}>
        {page}
      </Shell>
    </ApiContext.Provider>
  );
}
