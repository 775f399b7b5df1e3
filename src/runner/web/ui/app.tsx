import { LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, get, onSessionLapsed } from './api.js';
import { type Auth, AuthContext, useAuth } from './auth.js';
import { Loading } from './components.js';
import { AccountPage } from './pages/account.js';
import { ConfirmEmailPage } from './pages/confirm-email.js';
import { ConnectedAppsPage } from './pages/connected-apps.js';
import { ExecutorsPage } from './pages/executors.js';
import { LoginPage } from './pages/login.js';
import { NotFoundPage } from './pages/not-found.js';
import { ProjectPage } from './pages/project.js';
import { ProjectsPage } from './pages/projects.js';
import { RunPage } from './pages/run.js';
import { RunsPage } from './pages/runs.js';
import { SchedulesPage } from './pages/schedules.js';
import { SetupPage } from './pages/setup.js';
import { UsersPage } from './pages/users.js';
import { WorkflowPage } from './pages/workflow.js';
import { currentSession, forgetSession, watchSession } from './session.js';
import type { Me } from './types.js';

const PUBLIC_PATHS = ['/login', '/setup'];

function loginUrl(returnTo: string): string {
  return returnTo === '/' ? '/login' : `/login?return_to=${encodeURIComponent(returnTo)}`;
}

function Nav() {
  const { me, signOut } = useAuth();
  const { path } = useLocation();
  const link = (href: string, text: string) => (
    <a href={href} aria-current={path === href || path.startsWith(`${href}/`) ? 'page' : undefined}>
      {text}
    </a>
  );
  return (
    <header class="top">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <a class="brand" href="/">
        Pier runner
      </a>
      <nav aria-label="Main">
        {link('/projects', 'Projects')}
        {link('/runs', 'Runs')}
        {link('/schedules', 'Schedules')}
        {me.role === 'admin' && link('/executors', 'Executors')}
        {me.role === 'admin' && link('/users', 'Users')}
      </nav>
      <div class="account">
        {link('/account', me.name || me.email)}
        <button type="button" class="link" onClick={() => void signOut()}>
          Sign out
        </button>
      </div>
    </header>
  );
}

function SignedIn() {
  const { route } = useLocation();
  const [me, setMe] = useState<Me | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const abort = new AbortController();
    get<Me>('/api/me', abort.signal).then(setMe, () => {});
    return () => abort.abort();
  }, [tick]);
  const auth = useMemo<Auth | null>(
    () =>
      me && {
        me,
        refresh: () => setTick((t) => t + 1),
        signOut: async () => {
          try {
            await api('POST', '/api/auth/logout');
          } catch {
            // Signed out here either way; the server forgets the session when it expires.
          }
          forgetSession();
          route('/login');
        },
      },
    [me, route],
  );
  if (!auth) return <Loading what="your account" />;
  return (
    <AuthContext.Provider value={auth}>
      <Nav />
      <main id="main" tabIndex={-1}>
        <Router>
          <Route path="/" component={ProjectsPage} />
          <Route path="/projects" component={ProjectsPage} />
          <Route path="/projects/:id" component={ProjectPage} />
          <Route path="/projects/:id/:tab" component={ProjectPage} />
          <Route path="/workflows/:id" component={WorkflowPage} />
          <Route path="/runs" component={RunsPage} />
          <Route path="/runs/:id" component={RunPage} />
          <Route path="/schedules" component={SchedulesPage} />
          <Route path="/executors" component={ExecutorsPage} />
          <Route path="/users" component={UsersPage} />
          <Route path="/account" component={AccountPage} />
          <Route path="/account/email" component={ConfirmEmailPage} />
          <Route path="/connected-apps" component={ConnectedAppsPage} />
          <Route default component={NotFoundPage} />
        </Router>
      </main>
    </AuthContext.Provider>
  );
}

function Shell() {
  const { path, url, route } = useLocation();
  const [, rerender] = useState(0);
  useEffect(() => {
    // Expired or revoked (by a sign-out elsewhere, a password change): sign in again, then back here.
    onSessionLapsed(() => route(loginUrl(location.pathname + location.search), true));
    return watchSession(() => rerender((n) => n + 1));
  }, [route]);
  const isPublic = PUBLIC_PATHS.includes(path);
  const signedIn = currentSession() !== null;
  useEffect(() => {
    if (!isPublic && !signedIn) route(loginUrl(url), true);
  }, [isPublic, signedIn, url, route]);
  if (path === '/login') return <LoginPage />;
  if (path === '/setup') return <SetupPage />;
  if (!signedIn) return null;
  return <SignedIn />;
}

export function App() {
  return (
    <LocationProvider>
      <Shell />
    </LocationProvider>
  );
}
