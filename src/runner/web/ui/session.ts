/**
 * The web session: the 7-day JWT from POST /api/auth/login, kept in this browser's local
 * storage so every tab is signed in, and forgotten on sign-out (in every tab: the storage event).
 * It never goes into a URL; requests carry it in the Authorization header only.
 */
const KEY = 'pier.runner.session';

export interface Session {
  token: string;
  expiresAt: string;
}

export function currentSession(): Session | null {
  try {
    const s = JSON.parse(localStorage.getItem(KEY) ?? 'null') as Session | null;
    if (!s || typeof s.token !== 'string' || Date.parse(s.expiresAt) <= Date.now()) return null;
    return s;
  } catch {
    return null;
  }
}

export function saveSession(s: Session): void {
  localStorage.setItem(KEY, JSON.stringify({ token: s.token, expiresAt: s.expiresAt }));
}

export function forgetSession(): void {
  localStorage.removeItem(KEY);
}

/** Calls `changed` when another tab signs in or out. */
export function watchSession(changed: () => void): () => void {
  const listener = (e: StorageEvent) => {
    if (e.key === KEY || e.key === null) changed();
  };
  addEventListener('storage', listener);
  return () => removeEventListener('storage', listener);
}
