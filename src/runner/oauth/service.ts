import { NotFoundError, TooManyRequestsError } from '../../infra/errors.js';
import { FailureLimiter } from '../../infra/failure-limiter.js';
import { generateToken, randomId, randomUUID, sha256 } from '../../infra/secrets.js';
import { type AuthorizationRequest, type RawParams, redirectWith, validateAuthorizationRequest } from './authorize.js';
import { parseClientMetadata } from './client-metadata.js';
import type { ConnectedAppRow, OAuthGrantsRepository } from './grants-repository.js';
import type { OAuthClientsRepository } from './repository.js';
import { runnerMetrics } from '../metrics.js';
import { CODE_LIFETIME_MS, type FormParams, TokenEndpoint, type TokenResponse } from './tokens.js';

export const CLIENT_SECRET_PREFIX = 'rnr_ocs_';
export const DOCS_CLIENT_ID = 'rnr_cid_api_docs';

export interface RegistrationLimits {
  /** Registrations allowed per client address per window. */
  perAddress: number;
  windowMs: number;
}

/**
 * Open registration (RFC 7591 §3) is unauthenticated, so it is rate limited per address
 * (RFC 7591 §5 advises it): an MCP client registers once per installation, not in a loop.
 */
export const DEFAULT_REGISTRATION_LIMITS: RegistrationLimits = { perAddress: 20, windowMs: 3_600_000 };

export interface OAuthDeps {
  clients: OAuthClientsRepository;
  grants: OAuthGrantsRepository;
  now: () => Date;
  /** RUNNER_URL: the issuer (RFC 8414 §2) and the only resource (RFC 8707). */
  issuer: string;
  accessTokenTtlSeconds: number;
  registrationLimits?: RegistrationLimits;
}

/** The runner's OAuth 2.1 authorization server. */
export class OAuthService {
  private readonly registrations: FailureLimiter;

  private readonly tokens: TokenEndpoint;

  constructor(private readonly d: OAuthDeps) {
    this.tokens = new TokenEndpoint({
      clients: d.clients,
      grants: d.grants,
      now: d.now,
      runnerUrl: d.issuer,
      accessTokenTtlSeconds: d.accessTokenTtlSeconds,
    });
    const limits = d.registrationLimits ?? DEFAULT_REGISTRATION_LIMITS;
    this.registrations = new FailureLimiter({
      maxFailures: limits.perAddress,
      windowMs: limits.windowMs,
      banMs: limits.windowMs,
      maxKeys: 50_000,
      now: () => d.now().getTime(),
    });
  }

  /** RFC 7591 §3.2.1: the registered client, its secret shown this once (confidential clients). */
  async register(body: unknown, address: string) {
    const wait = this.registrations.retryAfter(address);
    if (wait > 0) throw new TooManyRequestsError('too many client registrations from this address; try again later', wait);
    const m = parseClientMetadata(body);
    this.registrations.fail(address);
    const now = this.d.now();
    const id = `rnr_cid_${randomId(16)}`;
    // RFC 7591 §3.2.1: a secret only for clients that authenticate at the token endpoint.
    const secret = m.tokenEndpointAuthMethod === 'none' ? null : generateToken(CLIENT_SECRET_PREFIX);
    await this.d.clients.insert({
      id,
      secret_hash: secret === null ? null : sha256(secret),
      name: m.clientName,
      redirect_uris: JSON.stringify(m.redirectUris),
      token_endpoint_auth_method: m.tokenEndpointAuthMethod,
      grant_types: JSON.stringify(m.grantTypes),
      scope: m.scope,
      client_uri: m.clientUri,
      created_at: now.toISOString(),
    });
    return {
      client_id: id,
      client_id_issued_at: Math.floor(now.getTime() / 1000),
      ...(secret === null ? {} : { client_secret: secret, client_secret_expires_at: 0 }),
      client_name: m.clientName,
      redirect_uris: m.redirectUris,
      token_endpoint_auth_method: m.tokenEndpointAuthMethod,
      grant_types: m.grantTypes,
      response_types: ['code'],
      scope: m.scope,
      ...(m.clientUri === null ? {} : { client_uri: m.clientUri }),
    };
  }

  /**
   * The interactive docs' own public client (PKCE, no secret), registered at start so that
   * "Authorize" in /api/docs works without a registration step. Its one redirect URI follows
   * RUNNER_URL.
   */
  async ensureDocsClient(redirectUri: string): Promise<void> {
    await this.d.clients.upsert({
      id: DOCS_CLIENT_ID,
      secret_hash: null,
      name: 'Runner API documentation',
      redirect_uris: JSON.stringify([redirectUri]),
      token_endpoint_auth_method: 'none',
      grant_types: JSON.stringify(['authorization_code', 'refresh_token']),
      scope: 'read write',
      client_uri: null,
      created_at: this.d.now().toISOString(),
    });
  }

  /** The authorization endpoint's checks (authorize.ts); throws a page error or a redirect error. */
  authorizationRequest(params: RawParams): Promise<AuthorizationRequest> {
    return validateAuthorizationRequest(params, (id) => this.d.clients.findById(id), this.d.issuer);
  }

  /**
   * Consent given: a grant and its single-use code, sent to the client (RFC 6749 §4.1.2, RFC 9207).
   * Null when the account was disabled (or deleted) since its session was checked: no grant is made.
   */
  async approve(req: AuthorizationRequest, userId: string): Promise<string | null> {
    const now = this.d.now();
    const nowIso = now.toISOString();
    const code = generateToken('rnr_oac_');
    const grantId = randomUUID();
    const created = await this.d.grants.createGrantWithCode(
      { id: grantId, user_id: userId, client_id: req.client.id, scope: req.scope, created_at: nowIso, last_used_at: nowIso, revoked_at: null },
      {
        code_hash: sha256(code), grant_id: grantId, client_id: req.client.id, redirect_uri: req.redirectUri,
        redirect_uri_given: req.redirectUriGiven ? 1 : 0, code_challenge: req.codeChallenge, scope: req.scope, created_at: nowIso,
        expires_at: new Date(now.getTime() + CODE_LIFETIME_MS).toISOString(), used_at: null,
      },
    );
    if (!created) return null;
    runnerMetrics()?.oauthGrants.inc();
    return redirectWith(req.redirectUri, { code, state: req.state }, this.d.issuer);
  }

  /** Consent refused: RFC 6749 §4.1.2.1 `access_denied`. */
  deny(req: AuthorizationRequest): string {
    return redirectWith(req.redirectUri, { error: 'access_denied', error_description: 'the user denied the request', state: req.state }, this.d.issuer);
  }

  /** An error of a request whose redirect URI was validated (RFC 6749 §4.1.2.1). */
  errorRedirect(redirectUri: string, error: string, description: string, state: string | undefined): string {
    return redirectWith(redirectUri, { error, error_description: description, state }, this.d.issuer);
  }

  async token(authorization: string | undefined, form: FormParams): Promise<TokenResponse> {
    const client = await this.tokens.authenticateClient(authorization, form);
    return this.tokens.exchange(client, form);
  }

  async revoke(authorization: string | undefined, form: FormParams): Promise<void> {
    const client = await this.tokens.authenticateClient(authorization, form);
    await this.tokens.revoke(client, form);
  }

  connectedApps(userId: string): Promise<ConnectedAppRow[]> {
    return this.d.grants.connectedApps(userId);
  }

  /** Revokes the application's grants: its tokens stop working on the next request. */
  async revokeConnectedApp(userId: string, clientId: string): Promise<void> {
    if (!(await this.d.grants.revokeClientForUser(userId, clientId, this.d.now().toISOString()))) {
      throw new NotFoundError('no connected application with this id');
    }
  }
}
