import { createHash } from 'node:crypto';
import { OAUTH_ACCESS_PREFIX } from '../auth/authenticate.js';
import { constantTimeEqual, generateToken, hasValidChecksum, randomUUID, sha256 } from '../../infra/secrets.js';
import { isThisResource, type Scope, parseScope } from './authorize.js';
import { OAuthError } from './errors.js';
import type { IssuedTokens, OAuthGrantsRepository } from './grants-repository.js';
import type { OAuthClientRow, OAuthClientsRepository } from './repository.js';
import { runnerMetrics } from '../metrics.js';

export const OAUTH_REFRESH_PREFIX = 'rnr_ort_';
/** OAuth 2.1 §4.1.2: codes are short-lived; 10 minutes at most (RFC 6749 §4.1.2). */
export const CODE_LIFETIME_MS = 10 * 60_000;
/** Refresh tokens lapse after 30 days unused; each rotation starts a new period. */
export const REFRESH_LIFETIME_MS = 30 * 24 * 3_600_000;
/**
 * Concurrent refreshes (several tabs or processes of one client) may present the same refresh
 * token within this window without it counting as theft (reported by MCP server operators).
 */
export const REFRESH_GRACE_MS = 5_000;

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  /** Absent for clients registered without the refresh_token grant (RFC 7591 §2). */
  refresh_token?: string;
  scope: Scope;
}

export type FormParams = Record<string, unknown>;

export interface TokenDeps {
  clients: OAuthClientsRepository;
  grants: OAuthGrantsRepository;
  now: () => Date;
  runnerUrl: string;
  accessTokenTtlSeconds: number;
}

/** RFC 6749 §5.2 */
const invalidGrant = (description: string) => new OAuthError(400, 'invalid_grant', description);
const invalidRequest = (description: string) => new OAuthError(400, 'invalid_request', description);

/** The grant types the client registered (RFC 7591 §2); stored as a JSON array. */
function allowsRefresh(client: OAuthClientRow): boolean {
  try {
    return (JSON.parse(client.grant_types) as unknown[]).includes('refresh_token');
  } catch {
    return false;
  }
}

/** A single form parameter; RFC 6749 §3.2: "Request and response parameters MUST NOT be included more than once". */
function param(form: FormParams, name: string): string | undefined {
  const v = form[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string') throw invalidRequest(`${name} is repeated`);
  return v;
}

/** RFC 7636 §4.1: 43-128 characters of [A-Z a-z 0-9 - . _ ~]. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/** RFC 7636 §4.6: BASE64URL(SHA256(ASCII(code_verifier))) == code_challenge, compared in constant time. */
export function pkceMatches(verifier: string, challenge: string): boolean {
  if (!VERIFIER.test(verifier)) return false;
  return constantTimeEqual(createHash('sha256').update(verifier).digest('base64url'), challenge);
}

/** The token endpoint (RFC 6749 §3.2, §4.1.3, §6) and revocation (RFC 7009). */
export class TokenEndpoint {
  constructor(private readonly d: TokenDeps) {}

  /**
   * Client authentication (RFC 6749 §2.3.1): the method the client registered, nothing else.
   * Public clients (`none`) only identify themselves with client_id (OAuth 2.1 §2.4).
   */
  async authenticateClient(authorization: string | undefined, form: FormParams): Promise<OAuthClientRow> {
    const basic = /^Basic\s+(\S+)$/i.exec(authorization ?? '');
    let id: string | undefined;
    let secret: string | undefined;
    let method: OAuthClientRow['token_endpoint_auth_method'];
    const challenge = basic ? { 'www-authenticate': 'Basic realm="runner-oauth"' } : undefined;
    const invalidClient = (d: string) => new OAuthError(401, 'invalid_client', d, challenge);
    if (basic) {
      const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon < 0) throw invalidClient('malformed Basic credentials');
      try {
        // RFC 6749 §2.3.1: both parts are form-urlencoded before Basic encoding.
        id = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
        secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
      } catch {
        throw invalidClient('malformed Basic credentials');
      }
      if (param(form, 'client_secret') !== undefined) throw invalidRequest('use one client authentication method (RFC 6749 §2.3)');
      method = 'client_secret_basic';
    } else {
      id = param(form, 'client_id');
      secret = param(form, 'client_secret');
      method = secret === undefined ? 'none' : 'client_secret_post';
    }
    if (!id) throw invalidClient('client authentication is required (client_id)');
    const formId = param(form, 'client_id');
    if (formId !== undefined && formId !== id) throw invalidClient('client_id does not match the authenticated client');
    const client = await this.d.clients.findById(id);
    if (!client) throw invalidClient('unknown client');
    if (client.token_endpoint_auth_method !== method) {
      throw invalidClient(`this client authenticates with ${client.token_endpoint_auth_method}`);
    }
    if (method !== 'none' && (client.secret_hash === null || !constantTimeEqual(sha256(secret ?? ''), client.secret_hash))) {
      throw invalidClient('wrong client secret');
    }
    return client;
  }

  async exchange(client: OAuthClientRow, form: FormParams): Promise<TokenResponse> {
    const grantType = param(form, 'grant_type');
    this.checkResource(form);
    if (grantType === 'authorization_code') return this.authorizationCode(client, form);
    if (grantType === 'refresh_token') {
      const uses = runnerMetrics()?.oauthRefresh;
      // RFC 7591 §2: a client registered without the refresh_token grant may not use it.
      if (!allowsRefresh(client)) {
        uses?.inc({ outcome: 'refused' });
        throw new OAuthError(400, 'unauthorized_client', 'this client is not registered for the refresh_token grant');
      }
      if (!uses) return this.refresh(client, form);
      return this.refresh(client, form).then(
        (issued) => {
          uses.inc({ outcome: 'issued' });
          return issued;
        },
        (e: unknown) => {
          uses.inc({ outcome: 'refused' });
          throw e;
        },
      );
    }
    if (grantType === undefined) throw invalidRequest('grant_type is required');
    throw new OAuthError(400, 'unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
  }

  /** RFC 8707 §2: a resource named at the token endpoint must be this runner. */
  private checkResource(form: FormParams): void {
    const resource = param(form, 'resource');
    if (resource !== undefined && !isThisResource(resource, this.d.runnerUrl)) {
      throw new OAuthError(400, 'invalid_target', "resource must be this runner's URL");
    }
  }

  /** RFC 6749 §4.1.3 with PKCE (RFC 7636 §4.5-4.6). */
  private async authorizationCode(client: OAuthClientRow, form: FormParams): Promise<TokenResponse> {
    const code = param(form, 'code');
    if (!code) throw invalidRequest('code is required');
    const hash = sha256(code);
    const row = await this.d.grants.findCode(hash);
    const now = this.d.now();
    if (!row || row.grant_revoked_at !== null) throw invalidGrant('the authorization code is not valid');
    // RFC 6749 §4.1.3: issued to this client. Checked before the replay rule, so another client
    // holding a leaked code cannot revoke the user's grant with it.
    if (row.client_id !== client.id) throw invalidGrant('the authorization code was issued to another client');
    if (row.used_at !== null) {
      // RFC 6749 §4.1.2 / OAuth 2.1 §4.1.3: a reused code revokes what the first use issued.
      await this.d.grants.revokeGrant(row.grant_id, now.toISOString());
      throw invalidGrant('the authorization code was already used; the tokens issued with it are revoked');
    }
    if (row.expires_at <= now.toISOString()) throw invalidGrant('the authorization code has expired');
    // RFC 6749 §4.1.3: the same redirect_uri as the authorization request, when it named one.
    const redirectUri = param(form, 'redirect_uri');
    if (row.redirect_uri_given === 1 ? redirectUri !== row.redirect_uri : redirectUri !== undefined && redirectUri !== row.redirect_uri) {
      throw invalidGrant('redirect_uri does not match the authorization request');
    }
    const verifier = param(form, 'code_verifier');
    if (!verifier) throw invalidRequest('code_verifier is required (PKCE, RFC 7636 §4.5)');
    if (!pkceMatches(verifier, row.code_challenge)) throw invalidGrant('code_verifier does not match the code_challenge');

    const { tokens, response } = this.mint(row.grant_id, row.user_id, client.id, row.scope, row.scope, now, null);
    const redeemed = await this.d.grants.redeemCode(hash, row.grant_id, now.toISOString(), tokens);
    if (redeemed === 'revoked') throw invalidGrant('the authorization code is not valid');
    if (redeemed === 'used') {
      // A concurrent request redeemed it between our read and write: that is a replay too.
      await this.d.grants.revokeGrant(row.grant_id, now.toISOString());
      throw invalidGrant('the authorization code was already used; the tokens issued with it are revoked');
    }
    if (!allowsRefresh(client)) {
      // The refresh token row stays unusable: its grant type is refused for this client.
      const { refresh_token: _unused, ...withoutRefresh } = response;
      return withoutRefresh;
    }
    return response;
  }

  /** RFC 6749 §6 with OAuth 2.1 §4.3.1 rotation. */
  private async refresh(client: OAuthClientRow, form: FormParams): Promise<TokenResponse> {
    const token = param(form, 'refresh_token');
    if (!token) throw invalidRequest('refresh_token is required');
    if (!hasValidChecksum(token, OAUTH_REFRESH_PREFIX)) throw invalidGrant('the refresh token is not valid');
    const row = await this.d.grants.findRefreshToken(sha256(token));
    const now = this.d.now();
    const nowIso = now.toISOString();
    if (!row || row.grant.revoked_at !== null) throw invalidGrant('the refresh token is not valid or was revoked');
    // RFC 6749 §6: bound to the client it was issued to.
    if (row.grant.client_id !== client.id) throw invalidGrant('the refresh token was issued to another client');
    if (row.expires_at <= nowIso) throw invalidGrant('the refresh token has expired');

    // RFC 6749 §6: the new scope can only narrow; the refresh token keeps the original scope.
    const rawScope = param(form, 'scope');
    const asked = rawScope === undefined ? row.scope : parseScope(rawScope);
    if (asked === null || (asked === 'write' && row.scope !== 'write')) {
      throw new OAuthError(400, 'invalid_scope', 'the scope can only be narrowed on refresh');
    }

    const { tokens, response } = this.mint(row.grant_id, row.grant.user_id, client.id, asked, row.scope, now, row.id);
    const revoked = () => invalidGrant('the refresh token is not valid or was revoked');
    if (row.rotated_at === null) {
      const rotated = await this.d.grants.rotate(row.id, row.grant_id, nowIso, tokens);
      if (rotated === 'issued') return response;
      if (rotated === 'revoked') throw revoked();
    }
    // Already rotated: a refresh with it within the grace window (another process of the client
    // that held the same token) gets a token pair of its own under the same grant, a chain that
    // lives on beside the first; anything later is reuse of a rotated token, so the whole grant
    // is revoked (OAuth 2.1 §4.3.1, RFC 9700 §4.14.2).
    const rotatedAt = row.rotated_at ?? (await this.d.grants.findRefreshToken(row.token_hash))?.rotated_at ?? nowIso;
    if (now.getTime() - Date.parse(rotatedAt) <= REFRESH_GRACE_MS) {
      if (await this.d.grants.issueAgain(row.grant_id, nowIso, tokens)) return response;
      throw revoked();
    }
    await this.d.grants.revokeGrant(row.grant_id, nowIso);
    throw invalidGrant('the refresh token was already used; the grant is revoked');
  }

  private mint(grantId: string, userId: string, clientId: string, scope: Scope, refreshScope: Scope, now: Date, parentId: string | null) {
    const access = generateToken(OAUTH_ACCESS_PREFIX);
    const refresh = generateToken(OAUTH_REFRESH_PREFIX);
    const nowIso = now.toISOString();
    const ttl = this.d.accessTokenTtlSeconds;
    const tokens: IssuedTokens = {
      access: {
        id: randomUUID(), user_id: userId, client_id: clientId, scope, token_hash: sha256(access), created_at: nowIso,
        expires_at: new Date(now.getTime() + ttl * 1000).toISOString(), revoked_at: null, grant_id: grantId,
      },
      refresh: {
        id: randomUUID(), grant_id: grantId, token_hash: sha256(refresh), scope: refreshScope, created_at: nowIso,
        expires_at: new Date(now.getTime() + REFRESH_LIFETIME_MS).toISOString(), rotated_at: null, parent_id: parentId,
      },
    };
    const response: TokenResponse = { access_token: access, token_type: 'Bearer', expires_in: ttl, refresh_token: refresh, scope };
    return { tokens, response };
  }

  /**
   * RFC 7009 §2.1-2.2: 200 whatever happens to the token, including unknown ones. A refresh
   * token ends its grant with every access token issued under it; an access token ends alone.
   * Tokens of other clients are left alone (§2.1: the client must own the token).
   */
  async revoke(client: OAuthClientRow, form: FormParams): Promise<void> {
    const token = param(form, 'token');
    if (!token) throw invalidRequest('token is required');
    const now = this.d.now().toISOString();
    if (token.startsWith(OAUTH_REFRESH_PREFIX)) {
      const row = await this.d.grants.findRefreshToken(sha256(token));
      if (row && row.grant.client_id === client.id && row.grant.revoked_at === null) await this.d.grants.revokeGrant(row.grant_id, now);
      return;
    }
    if (token.startsWith(OAUTH_ACCESS_PREFIX)) await this.d.grants.revokeAccessTokenByHash(sha256(token), client.id, now);
  }
}
