/**
 * The web session cookie: the same 7-day JWT the web UI sends as `Authorization: Bearer`, kept
 * httpOnly for the server-rendered OAuth pages (consent, connected applications), so one sign-in
 * serves both. The API never reads it: API credentials come in headers only, which is what keeps
 * the API free of cross-site request forgery.
 */
export function sessionCookieName(runnerUrl: string): string {
  // RFC 6265bis §4.1.3.2: a `__Host-` cookie is Secure, Path=/ and host-only, so no sibling
  // host and no plain-http response can set or shadow it. Only possible on https.
  return runnerUrl.startsWith('https:') ? '__Host-rnr_session' : 'rnr_session';
}

/**
 * `Set-Cookie` value (RFC 6265 §4.1) that stores `token` until `expiresAt`, or (token null)
 * removes the cookie. A JWT is base64url and dots only, so it needs no encoding.
 */
export function sessionCookie(runnerUrl: string, token: string | null, expiresAt?: string): string {
  if (token !== null && !/^[A-Za-z0-9._-]+$/.test(token)) throw new Error('a session token is base64url and dots only');
  const expires = token === null ? new Date(0) : new Date(expiresAt ?? 0);
  // Lax: the session must reach the authorization endpoint when a client's link opens it.
  const attributes = [`Expires=${expires.toUTCString()}`, 'Path=/', 'HttpOnly', 'SameSite=Lax'];
  if (runnerUrl.startsWith('https:')) attributes.push('Secure');
  return [`${sessionCookieName(runnerUrl)}=${token ?? ''}`, ...attributes].join('; ');
}
