import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { useAuth } from '../auth.js';
import { CopyButton, Empty, ErrorNote, Field, Loading, PageHeader, Table, TextField, Time } from '../components.js';
import { formatTime } from '../format.js';
import { useAction, useApi, useTitle } from '../hooks.js';
import { saveSession } from '../session.js';
import type { CreatedToken, Me, TokenInfo } from '../types.js';

function Profile() {
  const { me, refresh } = useAuth();
  const [name, setName] = useState(me.name);
  const [email, setEmail] = useState(me.email);
  const [saved, setSaved] = useState(false);
  // Administrators set addresses; anyone else's new address would need a proof by mail, which
  // this runner does not send (PATCH /api/me refuses it), so the field is read-only for them.
  const setsAddress = me.role === 'admin';
  const [pending, setPending] = useState<string | null>(null);
  const save = useAction(async () => {
    setSaved(false);
    const changed = await api<Me & { pendingEmail: string | null }>('PATCH', '/api/me', setsAddress ? { name, email } : { name });
    setPending(changed.pendingEmail);
    setSaved(true);
    refresh();
  });
  return (
    <form
      class="card"
      aria-labelledby="profile-h"
      onSubmit={(e) => {
        e.preventDefault();
        void save.run();
      }}
    >
      <h2 id="profile-h">Profile</h2>
      <ErrorNote error={save.error} placed={['name', 'email']} />
      <TextField label="Name" name="name" autocomplete="name" value={name} onInput={setName} error={save.error?.forField('name')} />
      <TextField
        label="Email"
        type="email"
        name="email"
        autocomplete="email"
        required
        readOnly={!setsAddress}
        hint={setsAddress ? undefined : 'Ask an administrator to change your address: others invite you by it.'}
        value={email}
        onInput={setEmail}
        error={save.error?.forField('email')}
      />
      <p class="meta">Role: {me.role === 'admin' ? 'administrator' : 'user'}</p>
      <div class="buttons">
        <button type="submit" disabled={save.busy}>
          Save profile
        </button>
        {saved && <span role="status">{pending ? `Saved. Open the link sent to ${pending} to make it your address.` : 'Saved.'}</span>}
      </div>
    </form>
  );
}

function PasswordChange() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [notice, setNotice] = useState('');
  const change = useAction(async () => {
    const answer = await api<{ token: string; expiresAt: string; notice: string }>('PUT', '/api/me/password', { currentPassword: current, newPassword: next });
    // Every other session ended with the change; this one goes on with the new token.
    saveSession(answer);
    setCurrent('');
    setNext('');
    setNotice(answer.notice);
  });
  return (
    <form
      class="card"
      aria-labelledby="password-h"
      onSubmit={(e) => {
        e.preventDefault();
        void change.run();
      }}
    >
      <h2 id="password-h">Password</h2>
      <ErrorNote error={change.error} placed={['currentPassword', 'newPassword']} />
      <TextField
        label="Current password"
        type="password"
        name="currentPassword"
        autocomplete="current-password"
        required
        value={current}
        onInput={setCurrent}
        error={change.error?.forField('currentPassword')}
      />
      <TextField
        label="New password"
        type="password"
        name="newPassword"
        autocomplete="new-password"
        required
        minLength={10}
        hint="At least 10 characters. Signs you out everywhere else and disconnects connected applications."
        value={next}
        onInput={setNext}
        error={change.error?.forField('newPassword')}
      />
      <div class="buttons">
        <button type="submit" disabled={change.busy}>
          Change password
        </button>
      </div>
      {notice && (
        <p class="alert ok" role="status">
          {notice}
        </p>
      )}
    </form>
  );
}

const EXPIRY_DAYS = [7, 30, 90, 365];

function Tokens() {
  const tokens = useApi<{ items: TokenInfo[] }>('/api/tokens');
  const [name, setName] = useState('');
  const [scope, setScope] = useState<'read' | 'write'>('read');
  const [days, setDays] = useState('30');
  const [created, setCreated] = useState<CreatedToken | null>(null);
  const create = useAction(async () => {
    const expiresAt = days === 'never' ? null : new Date(Date.now() + Number(days) * 86_400_000).toISOString();
    setCreated(await api<CreatedToken>('POST', '/api/tokens', { name, scope, expiresAt }));
    setName('');
    tokens.reload();
  });
  const revoke = useAction(async (t: TokenInfo) => {
    if (!confirm(`Revoke the token "${t.name}"? Scripts that use it stop working at once.`)) return;
    await api('DELETE', `/api/tokens/${encodeURIComponent(t.id)}`);
    tokens.reload();
  });
  return (
    <section class="card" aria-labelledby="tokens-h">
      <h2 id="tokens-h">Personal access tokens</h2>
      <p class="hint">
        For scripts and CI: send <code>Authorization: ApiKey &lt;token&gt;</code>. A read token reads; a write token also starts runs and changes things.
      </p>
      {created && (
        <div class="alert ok" role="status">
          <p>
            The token <strong>{created.name}</strong> is shown only now: copy it.
          </p>
          <p class="secret">
            <code>{created.token}</code> <CopyButton text={created.token} />
          </p>
          <button type="button" class="link" onClick={() => setCreated(null)}>
            I have copied it
          </button>
        </div>
      )}
      <form
        class="inline-form"
        aria-label="New token"
        onSubmit={(e) => {
          e.preventDefault();
          void create.run();
        }}
      >
        <ErrorNote error={create.error} placed={['name']} />
        <TextField label="Name" name="token-name" required maxLength={100} value={name} onInput={setName} error={create.error?.forField('name')} />
        <Field label="Scope">
          {(id) => (
            <select id={id} value={scope} onChange={(e) => setScope((e.currentTarget as HTMLSelectElement).value as 'read' | 'write')}>
              <option value="read">read</option>
              <option value="write">write</option>
            </select>
          )}
        </Field>
        <Field label="Expires">
          {(id) => (
            <select id={id} value={days} onChange={(e) => setDays((e.currentTarget as HTMLSelectElement).value)}>
              {EXPIRY_DAYS.map((d) => (
                <option key={d} value={String(d)}>
                  in {d} days
                </option>
              ))}
              <option value="never">never</option>
            </select>
          )}
        </Field>
        <button type="submit" disabled={create.busy}>
          Create token
        </button>
      </form>
      <ErrorNote error={tokens.error ?? revoke.error} />
      {tokens.loading && !tokens.data ? <Loading what="tokens" /> : null}
      {tokens.data && tokens.data.items.length === 0 ? <Empty>No tokens.</Empty> : null}
      {tokens.data && tokens.data.items.length > 0 ? (
        <Table columns={['Name', 'Scope', 'Token', 'Created', 'Expires', 'Last used', { hidden: 'Actions' }]}>
          {tokens.data.items.map((t) => (
            <tr key={t.id}>
              <td>{t.name}</td>
              <td>{t.scope}</td>
              <td>
                <code>…{t.tokenHint}</code>
              </td>
              <td>
                <Time iso={t.createdAt} />
              </td>
              <td>{t.expiresAt ? formatTime(t.expiresAt) : 'never'}</td>
              <td>
                {t.lastUsedAt ? (
                  <>
                    <Time iso={t.lastUsedAt} />
                    {t.lastUsedIp ? ` from ${t.lastUsedIp}` : ''}
                  </>
                ) : (
                  'never'
                )}
              </td>
              <td>
                <button type="button" class="danger small" disabled={revoke.busy} onClick={() => void revoke.run(t)}>
                  Revoke<span class="visually-hidden"> {t.name}</span>
                </button>
              </td>
            </tr>
          ))}
        </Table>
      ) : null}
    </section>
  );
}

export function AccountPage() {
  useTitle('Account');
  return (
    <>
      <PageHeader title="Account" sub={<a href="/connected-apps">Connected applications</a>} />
      <div class="grid-2">
        <Profile />
        <PasswordChange />
      </div>
      <Tokens />
    </>
  );
}
