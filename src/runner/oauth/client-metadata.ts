import { withoutUnshown } from '../../infra/unshown.js';
import type { ClientAuthMethod } from '../db/schema.js';
import { invalidClientMetadata, invalidRedirectUri } from './errors.js';
import { CLIENT_AUTH_METHODS, OAUTH_SCOPES } from './metadata.js';

export interface ClientMetadata {
  redirectUris: string[];
  tokenEndpointAuthMethod: ClientAuthMethod;
  grantTypes: string[];
  scope: string;
  clientName: string;
  clientUri: string | null;
}

const MAX_REDIRECT_URIS = 10;
const MAX_URI_LENGTH = 2000;
const MAX_NAME_LENGTH = 200;
const GRANT_TYPES = ['authorization_code', 'refresh_token'];
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** RFC 8252 §7.3 / §8.3: loopback redirects of native apps (any port at use time). */
export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname);
}

/**
 * A redirect URI a client may register: absolute (RFC 6749 §3.1.2), no fragment (RFC 6749
 * §3.1.2), https, or http only on a loopback host (OAuth 2.1 §1.5 and RFC 8252 §8.3: anything
 * else would carry the code in clear text). No user info, so the host shown on the consent
 * screen is the host the browser goes to.
 */
export function checkRedirectUri(raw: unknown): string {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > MAX_URI_LENGTH) {
    throw invalidRedirectUri(`each redirect URI must be a string of 1-${MAX_URI_LENGTH} characters`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidRedirectUri(`"${raw}" is not an absolute URL`);
  }
  if (raw.includes('#')) throw invalidRedirectUri(`"${raw}" must not contain a fragment (RFC 6749 §3.1.2)`);
  if (url.username || url.password) throw invalidRedirectUri(`"${raw}" must not contain user information`);
  if (url.protocol === 'https:') return raw;
  if (url.protocol === 'http:' && isLoopbackHost(url.hostname)) return raw;
  throw invalidRedirectUri(`"${raw}" must use https, or http on localhost, 127.0.0.1 or [::1] (OAuth 2.1 §1.5, RFC 8252 §8.3)`);
}

function stringList(value: unknown, field: string): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    throw invalidClientMetadata(`${field} must be an array of strings`);
  }
  return value as string[];
}

function optionalString(value: unknown, field: string, max: number): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.length > max) throw invalidClientMetadata(`${field} must be a string of at most ${max} characters`);
  return value;
}

/**
 * Validates RFC 7591 §2 client metadata. Unknown fields are ignored (RFC 7591 §2: "The
 * authorization server MUST ignore any client metadata sent by the client that it does not
 * understand"); values we do not support are refused rather than silently changed, except
 * `grant_types`, which defaults to both grants we offer (RFC 7591 §3.2.1 lets the server
 * replace requested values, and the response says what was registered).
 */
export function parseClientMetadata(body: unknown): ClientMetadata {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalidClientMetadata('send the client metadata as a JSON object (RFC 7591 §3.1)');
  }
  const b = body as Record<string, unknown>;

  const uris = stringList(b.redirect_uris, 'redirect_uris');
  // RFC 7591 §2: redirect_uris is needed by redirect-based flows, the only one we offer.
  if (!uris || uris.length === 0) throw invalidRedirectUri('redirect_uris must list at least one URI');
  if (uris.length > MAX_REDIRECT_URIS) throw invalidRedirectUri(`at most ${MAX_REDIRECT_URIS} redirect URIs`);
  const redirectUris = [...new Set(uris.map(checkRedirectUri))];

  // RFC 7591 §2: the default method is client_secret_basic.
  const method = b.token_endpoint_auth_method ?? 'client_secret_basic';
  if (!(CLIENT_AUTH_METHODS as readonly unknown[]).includes(method)) {
    throw invalidClientMetadata(`token_endpoint_auth_method must be one of ${CLIENT_AUTH_METHODS.join(', ')}`);
  }

  const grantTypes = stringList(b.grant_types, 'grant_types') ?? GRANT_TYPES;
  const unsupportedGrant = grantTypes.find((g) => !GRANT_TYPES.includes(g));
  if (unsupportedGrant) throw invalidClientMetadata(`grant type "${unsupportedGrant}" is not supported (only ${GRANT_TYPES.join(', ')})`);
  if (!grantTypes.includes('authorization_code')) throw invalidClientMetadata('grant_types must include authorization_code');

  // RFC 7591 §2.1: response_types and grant_types must agree; `code` is the only one here.
  const responseTypes = stringList(b.response_types, 'response_types') ?? ['code'];
  if (responseTypes.length === 0 || responseTypes.some((r) => r !== 'code')) {
    throw invalidClientMetadata('response_types must be ["code"] (authorization code flow only, OAuth 2.1 §4.1)');
  }

  const rawScope = optionalString(b.scope, 'scope', 200);
  const scopes = rawScope === undefined ? [...OAUTH_SCOPES] : rawScope.split(' ').filter(Boolean);
  const unknownScope = scopes.find((s) => !(OAUTH_SCOPES as readonly string[]).includes(s));
  if (unknownScope) throw invalidClientMetadata(`unknown scope "${unknownScope}" (supported: ${OAUTH_SCOPES.join(' ')})`);
  if (scopes.length === 0) throw invalidClientMetadata('scope must name read and/or write');

  // Controls and bidirectional formatting characters (Unicode TR9 §2) out: a name that reverses
  // the consent screen's text around it could pass for another application's.
  const raw = optionalString(b.client_name, 'client_name', MAX_NAME_LENGTH);
  const name = raw === undefined ? undefined : withoutUnshown(raw).trim();
  const clientUri = optionalString(b.client_uri, 'client_uri', MAX_URI_LENGTH);
  if (clientUri !== undefined) {
    let ok = false;
    try {
      ok = ['https:', 'http:'].includes(new URL(clientUri).protocol);
    } catch {}
    if (!ok) throw invalidClientMetadata('client_uri must be an http(s) URL');
  }

  return {
    redirectUris,
    tokenEndpointAuthMethod: method as ClientAuthMethod,
    grantTypes: [...new Set(grantTypes)],
    scope: OAUTH_SCOPES.filter((s) => scopes.includes(s)).join(' '),
    clientName: name || 'Unnamed application',
    clientUri: clientUri ?? null,
  };
}
