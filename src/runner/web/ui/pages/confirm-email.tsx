import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { useAuth } from '../auth.js';
import { ErrorNote, Loading, PageHeader } from '../components.js';
import { useAction, useTitle } from '../hooks.js';
import type { User } from '../types.js';

/**
 * Where the link mailed to a new address leads (`/account/email#token=…`; the fragment never
 * reaches a server log): sends the token as the signed-in account, which makes the address its own.
 */
export function ConfirmEmailPage() {
  useTitle('Confirm your address');
  const { refresh } = useAuth();
  const [address, setAddress] = useState('');
  const confirm = useAction(async (token: string) => {
    const user = await api<User>('POST', '/api/me/email/confirm', { token });
    setAddress(user.email);
    refresh();
  });
  useEffect(() => {
    const token = new URLSearchParams(location.hash.slice(1)).get('token');
    history.replaceState(null, '', location.pathname);
    if (token) void confirm.run(token);
  }, [confirm.run]);
  return (
    <>
      <PageHeader title="Confirm your address" />
      {confirm.busy ? <Loading what="the confirmation" /> : null}
      <ErrorNote error={confirm.error} />
      {address && (
        <p class="alert ok" role="status">
          Your address is now {address}.
        </p>
      )}
      <p>
        <a href="/account">Back to your account</a>
      </p>
    </>
  );
}
