import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Me } from './types.js';

export interface Auth {
  me: Me;
  /** Reads /api/me again (after a profile change). */
  refresh(): void;
  signOut(): Promise<void>;
}

export const AuthContext = createContext<Auth | null>(null);

export function useAuth(): Auth {
  const auth = useContext(AuthContext);
  if (!auth) throw new Error('useAuth outside a signed-in page');
  return auth;
}

/**
 * Where to go after signing in: a path of this site only (never `//host` or a scheme: no open
 * redirect). Pages the server renders (the OAuth consent screen) are opened as pages.
 */
export function safeReturnTo(value: string | undefined): string {
  if (!value?.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return '/';
  return value;
}

export const SERVER_PAGES = ['/oauth/'];

export function isServerPage(path: string): boolean {
  return SERVER_PAGES.some((p) => path.startsWith(p));
}
