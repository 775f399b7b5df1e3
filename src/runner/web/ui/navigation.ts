import { useLocation } from 'preact-iso';
import { useCallback } from 'preact/hooks';
import { api } from './api.js';
import { isServerPage, safeReturnTo } from './auth.js';
import { saveSession } from './session.js';
import type { SessionAnswer } from './types.js';

/** Sends the browser to `target` (a path of this site): a screen of the UI, or a server page. */
export function useGo(): (target: string, replace?: boolean) => void {
  const { route } = useLocation();
  return useCallback(
    (target: string, replace = false) => {
      const to = safeReturnTo(target);
      if (isServerPage(to)) location.assign(to);
      else route(to, replace);
    },
    [route],
  );
}

/** Sign-in for the web UI and for the OAuth consent screen at once (the session cookie). */
export async function signIn(email: string, password: string): Promise<void> {
  saveSession(await api<SessionAnswer>('POST', '/api/auth/login', { email, password, browserSession: true }));
}
