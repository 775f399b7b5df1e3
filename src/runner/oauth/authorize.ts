import { isLoopbackHost } from './client-metadata.js';
import { OAuthError } from './errors.js';
import type { OAuthClientRow } from './repository.js';

export type Scope = 'read' | 'write';

/** A validated authorization request (RFC 6749 §4.1.1 with OAuth 2.1 §4.1.1 and RFC 7636). */
export interface AuthorizationRequest {
  client: OAuthClientRow;
  redirectUri: string;
  redirectUriGiven: boolean;
  state: string | undefined;
  scope: Scope;
  codeChallenge: string;
}

/**
 * An error that must NOT be sent to the redirect URI: the client or the redirect URI itself is
 * invalid, so the user sees an error page instead (RFC 6749 §4.1.2.1; open-redirect defence,
 * RFC 9700 §4.11).
 */
export class AuthorizationPageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuthorizationPageError';
  }
}

/** An error reported to the client at its (validated) redirect URI (RFC 6749 §4.1.2.1). */
export class AuthorizationRedirectError extends OAuthError {
  constructor(
    error: string,
    description: string,
    readonly redirectUri: string,
    readonly state: string | undefined,
  ) {
    super(302, error, description);
  }
}

export type RawParams = Record<string, unknown>;

/** A single string parameter; repeating one is an error (RFC 6749 §3.1). */
function single(params: RawParams, name: string): string | undefined | null {
  const v = params[name];
  if (v === undefined || v === '') return undefined;
  return typeof v === 'string' ? v : null;
}

function withoutPort(u: URL): string {
  return `${u.protocol}//${u.hostname}${u.pathname}${u.search}`;
}

/**
 * Exact string match (OAuth 2.1 §2.3.1, RFC 9700 §4.1.3), except that a loopback redirect may
 * use any port at authorization time (RFC 8252 §7.3: native apps take an ephemeral port).
 */
export function redirectUriMatches(registered: string, given: string): boolean {
  if (registered === given) return true;
  let r: URL;
  let g: URL;
  try {
    r = new URL(registered);
    g = new URL(given);
  } catch {
    return false;
  }
  if (r.protocol !== 'http:' || g.protocol !== 'http:' || !isLoopbackHost(r.hostname)) return false;
  if (given.includes('#') || g.username || g.password) return false;
  return withoutPort(r) === withoutPort(g);
}

/** RFC 7636 §4.2: BASE64URL(SHA256(verifier)) is 43 characters of the base64url alphabet. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** Parses a scope parameter (RFC 6749 §3.3): `write` implies `read`. Null when unknown. */
export function parseScope(raw: string): Scope | null {
  const parts = raw.split(' ').filter(Boolean);
  if (parts.length === 0 || parts.some((p) => p !== 'read' && p !== 'write')) return null;
  return parts.includes('write') ? 'write' : 'read';
}

export function clientMaxScope(client: OAuthClientRow): Scope {
  return client.scope.split(' ').includes('write') ? 'write' : 'read';
}

/**
 * The validation pipeline of the authorization endpoint. Client and redirect URI first: until
 * both are known good nothing is redirected anywhere.
 */
export async function validateAuthorizationRequest(
  params: RawParams,
  findClient: (id: string) => Promise<OAuthClientRow | undefined>,
  runnerUrl: string,
): Promise<AuthorizationRequest> {
  const clientId = single(params, 'client_id');
  if (!clientId) throw new AuthorizationPageError('The request does not name a client (client_id).');
  const client = await findClient(clientId);
  if (!client) throw new AuthorizationPageError('The application is not registered here (unknown client_id).');

  const registered = JSON.parse(client.redirect_uris) as string[];
  const given = single(params, 'redirect_uri');
  if (given === null) throw new AuthorizationPageError('redirect_uri is repeated.');
  let redirectUri: string;
  if (given === undefined) {
    // RFC 6749 §3.1.2.3: may be omitted only when exactly one is registered.
    if (registered.length !== 1) throw new AuthorizationPageError('The request must name its redirect_uri.');
    redirectUri = registered[0]!;
  } else {
    if (!registered.some((r) => redirectUriMatches(r, given))) {
      throw new AuthorizationPageError('The redirect_uri does not match any URI registered for this application.');
    }
    redirectUri = given;
  }

  const state = single(params, 'state');
  const fail = (error: string, description: string) =>
    new AuthorizationRedirectError(error, description, redirectUri, typeof state === 'string' ? state : undefined);
  if (state === null) throw fail('invalid_request', 'state is repeated');

  const get = (name: string): string | undefined => {
    const v = single(params, name);
    if (v === null) throw fail('invalid_request', `${name} is repeated`);
    return v;
  };
  // OAuth 2.1 §4.1.1: the authorization code flow only.
  if (get('response_type') !== 'code') throw fail('unsupported_response_type', 'response_type must be "code"');

  // OAuth 2.1 §4.1.1 / RFC 7636 §4.3: PKCE is required, and only S256 (plain is refused, §7.2).
  const challenge = get('code_challenge');
  if (!challenge) throw fail('invalid_request', 'code_challenge is required (PKCE, RFC 7636)');
  if (get('code_challenge_method') !== 'S256') throw fail('invalid_request', 'code_challenge_method must be S256');
  if (!S256_CHALLENGE.test(challenge)) throw fail('invalid_request', 'code_challenge must be 43 base64url characters (RFC 7636 §4.2)');

  // RFC 6749 §3.3: default scope = what the client registered.
  const rawScope = get('scope');
  const scope = rawScope === undefined ? clientMaxScope(client) : parseScope(rawScope);
  if (scope === null) throw fail('invalid_scope', 'scope must be read and/or write');
  if (scope === 'write' && clientMaxScope(client) !== 'write') throw fail('invalid_scope', 'this client registered for read only');

  // RFC 8707 §2: the resource, when named, must be this runner (the only resource we serve).
  const resource = get('resource');
  if (resource !== undefined && !isThisResource(resource, runnerUrl)) {
    throw fail('invalid_target', 'resource must be this runner\'s URL');
  }

  return { client, redirectUri, redirectUriGiven: given !== undefined, state: state ?? undefined, scope, codeChallenge: challenge };
}

/** RFC 8707 §2: an absolute URI without fragment; we accept this runner or a URL inside it. */
export function isThisResource(resource: string, runnerUrl: string): boolean {
  if (resource.includes('#')) return false;
  const trimmed = resource.replace(/\/+$/, '');
  return trimmed === runnerUrl || trimmed.startsWith(`${runnerUrl}/`);
}

/** The authorization response (RFC 6749 §4.1.2) with `iss` (RFC 9207 §2). */
export function redirectWith(redirectUri: string, params: Record<string, string | undefined>, issuer: string): string {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v);
  url.searchParams.set('iss', issuer);
  return url.toString();
}
