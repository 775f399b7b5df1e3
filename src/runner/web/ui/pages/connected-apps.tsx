import { api } from '../api.js';
import { Empty, ErrorNote, Loading, PageHeader, Time } from '../components.js';
import { useAction, useApi, useTitle } from '../hooks.js';
import type { ConnectedApp } from '../types.js';

const SCOPE_TEXT = { read: 'read your projects, workflows and runs', write: 'read and change your projects, workflows and runs, and start runs' };

/** Applications the user authorized (OAuth), each revocable at once. */
export function ConnectedAppsPage() {
  useTitle('Connected applications');
  const apps = useApi<{ items: ConnectedApp[] }>('/api/connected-apps');
  const revoke = useAction(async (a: ConnectedApp) => {
    if (!confirm(`Disconnect "${a.name}"? Its access stops at once; it must ask you again to reconnect.`)) return;
    await api('DELETE', `/api/connected-apps/${encodeURIComponent(a.id)}`);
    apps.reload();
  });
  return (
    <>
      <PageHeader title="Connected applications" sub="Applications you allowed to use the runner on your behalf. Names are the applications' own and unverified." />
      <ErrorNote error={apps.error ?? revoke.error} />
      {apps.loading && !apps.data ? <Loading what="applications" /> : null}
      {apps.data && apps.data.items.length === 0 ? <Empty>No application is connected.</Empty> : null}
      {apps.data && apps.data.items.length > 0 ? (
        <ul class="cards">
          {apps.data.items.map((a) => (
            <li key={a.id} class="card">
              <h2>{a.name}</h2>
              <p>Can {SCOPE_TEXT[a.scope] ?? a.scope}.</p>
              <p class="meta">
                {a.clientUri ? (
                  <>
                    Says it is <span class="url">{a.clientUri}</span>.{' '}
                  </>
                ) : null}
                First authorized <Time iso={a.firstAuthorizedAt} />, last used <Time iso={a.lastUsedAt} />.
              </p>
              <button type="button" class="danger" disabled={revoke.busy} onClick={() => void revoke.run(a)}>
                Disconnect<span class="visually-hidden"> {a.name}</span>
              </button>
            </li>
          ))}
        </ul>
      ) : null}
    </>
  );
}
