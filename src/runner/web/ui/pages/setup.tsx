import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { signIn, useGo } from '../navigation.js';
import { ErrorNote, TextField } from '../components.js';
import { useAction, useTitle } from '../hooks.js';
import { saveSession } from '../session.js';
import type { SessionAnswer } from '../types.js';

/** The token of the one-time setup link (`/setup#token=…`: a fragment never reaches a server log). */
function setupToken(): string {
  return new URLSearchParams(location.hash.slice(1)).get('token') ?? '';
}

/** The first administrator of a fresh runner, with the link `pier serve` printed. */
export function SetupPage() {
  useTitle('Set up the runner');
  const go = useGo();
  const [token, setToken] = useState(setupToken);
  useEffect(() => {
    const changed = () => setToken(setupToken());
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const setup = useAction(async () => {
    const created = await api<{ session: SessionAnswer }>('POST', '/api/setup', { setupToken: token, email, password, ...(name.trim() ? { name } : {}) });
    saveSession(created.session);
    // The link has done its work: out of the address bar and the history.
    history.replaceState(null, '', '/setup');
    // Also the session cookie of the consent screen: one sign-in for everything.
    await signIn(email, password).catch(() => {});
    go('/projects', true);
  });
  if (!token) {
    return (
      <main id="main" class="narrow">
        <h1>Set up the runner</h1>
        <div class="card">
          <p>
            Open the one-time setup link that <code>pier serve</code> printed when it started (it ends in <code>/setup#token=…</code>). Each start prints
            one while the runner has no user, and every link printed stays valid until the first administrator exists.
          </p>
          <p>
            Or create the administrator from a shell on the server: <code>npx pier runner user add --email you@example.com --admin</code>, then{' '}
            <a href="/login">sign in</a>.
          </p>
        </div>
      </main>
    );
  }
  return (
    <main id="main" class="narrow">
      <h1>Set up the runner</h1>
      <p class="sub">Create the first administrator. They can then add other users.</p>
      <form
        class="card"
        onSubmit={(e) => {
          e.preventDefault();
          void setup.run();
        }}
      >
        <ErrorNote error={setup.error} placed={['email', 'name', 'password']} />
        <TextField label="Name" name="name" autocomplete="name" value={name} onInput={setName} error={setup.error?.forField('name')} />
        <TextField label="Email" type="email" name="email" autocomplete="username" required value={email} onInput={setEmail} error={setup.error?.forField('email')} />
        <TextField
          label="Password"
          type="password"
          name="password"
          autocomplete="new-password"
          required
          minLength={10}
          hint="At least 10 characters."
          value={password}
          onInput={setPassword}
          error={setup.error?.forField('password')}
        />
        <button type="submit" disabled={setup.busy}>
          {setup.busy ? 'Creating…' : 'Create administrator'}
        </button>
      </form>
    </main>
  );
}
