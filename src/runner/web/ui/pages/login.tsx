import { useLocation } from 'preact-iso';
import { useState } from 'preact/hooks';
import { signIn, useGo } from '../navigation.js';
import { safeReturnTo } from '../auth.js';
import { ErrorNote, TextField } from '../components.js';
import { useAction, useTitle } from '../hooks.js';

export function LoginPage() {
  useTitle('Sign in');
  const { query } = useLocation();
  const go = useGo();
  const returnTo = safeReturnTo(query.return_to);
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const login = useAction(async () => {
    await signIn(email, password);
    go(returnTo, true);
  });
  return (
    <main id="main" class="narrow">
      <h1>Sign in to the Pier runner</h1>
      {returnTo.startsWith('/oauth/') ? <p class="sub">An application asks for access to your account; sign in to review its request.</p> : null}
      <form
        class="card"
        onSubmit={(e) => {
          e.preventDefault();
          void login.run();
        }}
      >
        <ErrorNote error={login.error} />
        <TextField label="Email" type="email" name="email" autocomplete="username" required value={email} onInput={setEmail} />
        <TextField label="Password" type="password" name="password" autocomplete="current-password" required value={password} onInput={setPassword} />
        <button type="submit" disabled={login.busy}>
          {login.busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
