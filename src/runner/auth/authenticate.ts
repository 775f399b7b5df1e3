import type { FastifyContextConfig, FastifyRequest } from 'fastify';
import { AppError, ForbiddenError, UnauthorizedError } from '../../infra/errors.js';
import { timingSafeEqual } from 'node:crypto';
import { hasValidChecksum, sha256 } from '../../infra/secrets.js';
import type { UserRow } from '../users/repository.js';
import type { UsersRepository } from '../users/repository.js';
import { type Access, type PrincipalKind, allows, challengeFor, insufficientScopeChallenge } from './access.js';
import { EXPIRED, type JwtSessions } from './jwt.js';
import { type CredentialEpoch, CredentialCache } from './credential-cache.js';
import type { CredentialGuard } from './guard.js';
import type { OAuthAccessTokenRow, OAuthTokensRepository, PersonalTokenRow, PersonalTokensRepository, TokenScope } from './repository.js';

export const PAT_PREFIX = 'rnr_pat_';
export const OAUTH_ACCESS_PREFIX = 'rnr_oat_';
/** Last use is written at most this often per token (Gitea: 30 s); it is a write on a hot path. */
/** Answered to `ApiKey <key>` when API_KEY is unset: "not valid" would send admins hunting for a typo. */
const NO_ADMIN_KEY = 'this runner has no admin key configured (API_KEY is unset): set API_KEY to a secret of at least 32 characters where the runner runs, restart it, and give executors the same key';

export const LAST_USED_WINDOW_MS = 30_000;

/**
 * A genuine credential that no longer holds: expired, revoked, or a session ended by a password
 * change. Its hash or signature matched, so it guesses nothing and the guard does not score it
 * (an OAuth client meets an expired access token every hour in normal life).
 */
export class LapsedCredentialError extends UnauthorizedError {}

export type Principal =
  | { type: 'user'; via: 'jwt'; user: UserRow }
  | { type: 'user'; via: 'pat' | 'oauth'; user: UserRow; scope: TokenScope; tokenId: string }
  | { type: 'api-key' };

export type UserPrincipal = Extract<Principal, { type: 'user' }>;

export function principalKind(p: Principal): PrincipalKind {
  if (p.type === 'api-key') return 'api-key';
  if (p.via === 'jwt') return p.user.role === 'admin' ? 'jwt-admin' : 'jwt-member';
  return p.scope === 'write' ? 'token-write' : 'token-read';
}

/** Route options helper: `{ config: access(USER_READ) }`. */
export function access(a: Access): FastifyContextConfig {
  return { access: a } as FastifyContextConfig;
}

export function accessOf(config: unknown): Access | undefined {
  return (config as { access?: Access } | undefined)?.access;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by `Authenticator.enforce` (a request decorator: cheaper than a WeakMap per request). */
    principal: Principal | null;
  }
}

export function principalOf(req: FastifyRequest): Principal {
  const p = req.principal;
  if (!p) throw new Error('route without an authenticated principal');
  return p;
}

/**
 * Whose turn a request takes on the serving loop and whose bucket paces it (infra/pace-hooks.ts):
 * a user's, whatever the credential; the admin key is every executor's, so each host takes its
 * own turns (the key is not paced), as requests without credentials (login, OAuth, docs) do by
 * address.
 */
export function callerOf(req: FastifyRequest): string {
  const p = req.principal;
  if (p?.type === 'user') return `user:${p.user.id}`;
  return `${p ? 'admin-key' : 'anonymous'}:${req.ip}`;
}

/** The signed-in user of a route that only users reach (jwt/token, not the admin key). */
export function userOf(req: FastifyRequest): UserPrincipal {
  const p = principalOf(req);
  if (p.type !== 'user') throw new ForbiddenError('this operation needs a user, not the admin API key');
  return p;
}

export interface AuthDeps {
  users: UsersRepository;
  pats: PersonalTokensRepository;
  oauthTokens: OAuthTokensRepository;
  jwt: JwtSessions;
  apiKey: string | null;
  now: () => Date;
  /** Shared "credentials changed" signal; without it nothing is cached. */
  credentialEpoch?: CredentialEpoch;
  /** RFC 9728 protected-resource metadata URL, sent in every 401 challenge; none = plain challenge. */
  resourceMetadataUrl?: string;
  /** Scores rejected credentials per address; none = no limit (unit tests). */
  guard?: CredentialGuard;
}

interface CachedPersonalToken {
  row: PersonalTokenRow;
  principal: Principal;
  expiresMs: number;
  lastUsedMs: number;
}

/** A session's user as read from the database, and the principal every request of it gets. */
interface CachedSessionUser {
  user: UserRow;
  principal: Principal;
}

interface CachedOAuthToken {
  row: OAuthAccessTokenRow;
  principal: Principal;
  expiresMs: number;
  /** Last write of the grant's last use by this instance (connected apps show it). */
  lastUsedMs: number;
}

/** Every request with the admin key gets this one principal; nothing writes to a principal. */
const API_KEY_PRINCIPAL: Principal = Object.freeze({ type: 'api-key' });

const DISABLED = 'this account is disabled; an administrator can enable it again';

export class Authenticator {
  // Look-ups of the last credential epoch (see credential-cache.ts): a revocation, password or
  // role change anywhere bumps the epoch and empties these, before this process's next request
  // when the change was made here, within EPOCH_REUSE_MS (1 ms) of its commit when it was not.
  private readonly sessionUsers = new CredentialCache<CachedSessionUser>();
  private readonly personalTokens = new CredentialCache<CachedPersonalToken>();
  private readonly oauthTokens = new CredentialCache<CachedOAuthToken>();

  private readonly challenge: string;
  /** API_KEY's bytes, encoded once for the comparison every `ApiKey` request makes. */
  private readonly adminKey: Buffer | null;
  /**
   * Whether API_KEY itself starts like a personal or OAuth token. Only then can a value with such
   * a prefix be the admin key; otherwise the public prefix alone says it is not, and token
   * requests skip the comparison (see `resolve`).
   */
  private readonly adminKeyLooksLikeToken: boolean;

  constructor(private readonly deps: AuthDeps) {
    this.challenge = challengeFor(deps.resourceMetadataUrl);
    this.adminKey = deps.apiKey === null ? null : Buffer.from(deps.apiKey);
    this.adminKeyLooksLikeToken = deps.apiKey !== null && (deps.apiKey.startsWith(PAT_PREFIX) || deps.apiKey.startsWith(OAUTH_ACCESS_PREFIX));
  }

  private epoch(): number | null {
    return this.deps.credentialEpoch?.current() ?? null;
  }

  /**
   * Resolves the Authorization header to a principal; throws 401 for missing or invalid
   * credentials. Answers without waiting when every look-up hits a cache (the common case: one
   * promise less per request matters on the API's hottest path), else returns a promise.
   */
  authenticate(header: string | undefined, ip: string): Principal | Promise<Principal> {
    return this.resolve(header, ip, undefined);
  }

  /**
   * `authenticate`, with `guard` checked (429) after the admin key had its chance and before any
   * other credential is looked at (see `enforce`). The header is split once for both.
   */
  private resolve(header: string | undefined, ip: string, guard: CredentialGuard | undefined): Principal | Promise<Principal> {
    if (!header) {
      guard?.check(ip);
      throw this.unauthorized('send credentials in the Authorization header (Bearer or ApiKey with a token, or Bearer <JWT>)');
    }
    const space = header.indexOf(' ');
    const sent = space < 0 ? header : header.slice(0, space);
    const value = space < 0 ? '' : header.slice(space + 1).trim();
    // Schemes are case-insensitive (RFC 9110 §11.1); the usual spellings skip the lower-casing.
    const scheme = sent === 'Bearer' ? 'bearer' : sent === 'ApiKey' ? 'apikey' : sent.toLowerCase();
    // The right admin key passes before the guard: executors share an address with other clients
    // (NAT, one host), whose mistakes must not stop them. It is at least 32 characters
    // (config.ts), so a banned address gains nothing by guessing it. A value with a token's
    // prefix is a token unless API_KEY itself looks like one (the prefix is public).
    const token = value.startsWith(PAT_PREFIX) || value.startsWith(OAUTH_ACCESS_PREFIX);
    if (scheme === 'apikey' && (!token || this.adminKeyLooksLikeToken) && this.matchesAdminKey(value)) return API_KEY_PRINCIPAL;
    guard?.check(ip);
    if (!value) throw this.unauthorized('the Authorization header has no credentials');
    switch (scheme) {
      case 'bearer':
        // MCP clients send OAuth access tokens as Bearer (RFC 6750 §2.1), and scripts often send
        // personal tokens the same way; the prefix tells both from the web UI's JWT without
        // trying to parse one as the other. Either token keeps the scope it has as ApiKey.
        if (value.startsWith(OAUTH_ACCESS_PREFIX)) return this.oauthToken(value);
        if (value.startsWith(PAT_PREFIX)) return this.personalToken(value, ip);
        return this.session(value);
      case 'apikey':
        if (value.startsWith(PAT_PREFIX)) return this.personalToken(value, ip);
        if (value.startsWith(OAUTH_ACCESS_PREFIX)) return this.oauthToken(value);
        throw this.unauthorized(this.deps.apiKey === null ? NO_ADMIN_KEY : 'the API key or token is not valid');
      default:
        throw this.unauthorized(`unsupported authorization scheme "${sent}"; use ApiKey or Bearer`);
    }
  }

  private session(token: string): Principal | Promise<Principal> {
    const claims = this.deps.jwt.verifyKnown(token);
    if (claims === EXPIRED) throw this.lapsed('the session has expired; log in again');
    const cached = claims && this.sessionUsers.get(claims.sub, this.epoch());
    if (claims && cached) return this.sessionPrincipal(cached, claims.sv);
    return this.sessionSlow(token);
  }

  private async sessionSlow(token: string): Promise<Principal> {
    const claims = await this.deps.jwt.verify(token);
    if (claims === EXPIRED) throw this.lapsed('the session has expired; log in again');
    if (!claims) throw this.unauthorized('the session token is invalid or expired; log in again');
    const epoch = this.epoch();
    const user = await this.deps.users.findById(claims.sub);
    if (!user) throw this.lapsed('the session has ended; log in again');
    const cached: CachedSessionUser = { user, principal: { type: 'user', via: 'jwt', user } };
    this.sessionUsers.set(claims.sub, cached, epoch);
    return this.sessionPrincipal(cached, claims.sv);
  }

  private sessionPrincipal({ user, principal }: CachedSessionUser, sessionEpoch: number): Principal {
    if (user.session_epoch !== sessionEpoch) throw this.lapsed('the session has ended; log in again');
    if (user.disabled_at !== null) throw this.lapsed(DISABLED);
    return principal;
  }

  /**
   * 401 with the challenge; its `resource_metadata` lets OAuth clients discover this server
   * (RFC 9728 §5.1: WWW-Authenticate parameter on the protected resource's 401).
   */
  private unauthorized(detail: string): UnauthorizedError {
    return new UnauthorizedError(detail, this.challenge);
  }

  private lapsed(detail: string): LapsedCredentialError {
    return new LapsedCredentialError(detail, this.challenge);
  }

  /**
   * Cached by the token as sent, not by its hash: the hash is what the database keeps (a stolen
   * table gives no token), and computing it was a third of what a cached request cost here
   * (bench/runner-auth.ts). Only tokens the database knows are kept, so the cache holds nothing
   * a client chose; the token is in this process's memory with every request anyway.
   */
  private personalToken(token: string, ip: string): Principal | Promise<Principal> {
    const entry = this.personalTokens.get(token, this.epoch());
    return entry ? this.checkPersonalToken(entry, ip) : this.personalTokenSlow(token, ip);
  }

  private async personalTokenSlow(token: string, ip: string): Promise<Principal> {
    // The checksum rejects typos and random strings without a database round trip.
    if (!hasValidChecksum(token, PAT_PREFIX)) throw this.unauthorized('the personal access token is malformed');
    const hash = sha256(token);
    const epoch = this.epoch();
    const found = await this.deps.pats.findWithUser(hash);
    if (!found) throw this.unauthorized('the personal access token is not valid or was revoked');
    const { token: row, user } = found;
    const entry: CachedPersonalToken = {
      row,
      principal: { type: 'user', via: 'pat', user, scope: row.scope, tokenId: row.id },
      // Times as numbers once, not as strings compared on every request.
      expiresMs: row.expires_at === null ? Number.POSITIVE_INFINITY : Date.parse(row.expires_at),
      lastUsedMs: row.last_used_at === null ? Number.NEGATIVE_INFINITY : Date.parse(row.last_used_at),
    };
    this.personalTokens.set(token, entry, epoch);
    return this.checkPersonalToken(entry, ip);
  }

  private checkPersonalToken(entry: CachedPersonalToken, ip: string): Principal | Promise<Principal> {
    if (entry.row.revoked_at !== null) throw this.lapsed('the personal access token was revoked');
    if (entry.principal.type === 'user' && entry.principal.user.disabled_at !== null) throw this.lapsed(DISABLED);
    const nowMs = this.deps.now().getTime();
    if (entry.expiresMs <= nowMs) throw this.lapsed('the personal access token has expired');
    if (entry.lastUsedMs >= nowMs - LAST_USED_WINDOW_MS) return entry.principal;
    // The cached entry is ours: keep it in step so the next request does not write again.
    entry.lastUsedMs = nowMs;
    const notBefore = new Date(nowMs - LAST_USED_WINDOW_MS).toISOString();
    return this.deps.pats.touch(entry.row.id, new Date(nowMs).toISOString(), ip, notBefore).then(() => entry.principal);
  }

  /** Like personal tokens (cached as sent): answers without waiting when the look-up is cached. */
  private oauthToken(token: string): Principal | Promise<Principal> {
    const entry = this.oauthTokens.get(token, this.epoch());
    return entry ? this.checkOAuthToken(entry) : this.oauthTokenSlow(token);
  }

  private async oauthTokenSlow(token: string): Promise<Principal> {
    if (!hasValidChecksum(token, OAUTH_ACCESS_PREFIX)) throw this.unauthorized('the OAuth access token is malformed');
    const hash = sha256(token);
    const epoch = this.epoch();
    const found = await this.deps.oauthTokens.findWithUser(hash);
    if (!found) throw this.unauthorized('the OAuth access token is not valid or was revoked');
    const { token: row, user } = found;
    const entry: CachedOAuthToken = {
      row,
      principal: { type: 'user', via: 'oauth', user, scope: row.scope, tokenId: row.id },
      expiresMs: Date.parse(row.expires_at),
      lastUsedMs: Number.NEGATIVE_INFINITY,
    };
    this.oauthTokens.set(token, entry, epoch);
    return this.checkOAuthToken(entry);
  }

  private checkOAuthToken(entry: CachedOAuthToken): Principal | Promise<Principal> {
    if (entry.row.revoked_at !== null) throw this.lapsed('the OAuth access token was revoked');
    if (entry.principal.type === 'user' && entry.principal.user.disabled_at !== null) throw this.lapsed(DISABLED);
    const nowMs = this.deps.now().getTime();
    if (entry.expiresMs <= nowMs) throw this.lapsed('the OAuth access token has expired');
    const grantId = entry.row.grant_id;
    if (grantId === null || entry.lastUsedMs >= nowMs - LAST_USED_WINDOW_MS) return entry.principal;
    // The grant's last use (connected apps), written at most once per window like a PAT's.
    entry.lastUsedMs = nowMs;
    const notBefore = new Date(nowMs - LAST_USED_WINDOW_MS).toISOString();
    return this.deps.oauthTokens.touchGrant(grantId, new Date(nowMs).toISOString(), notBefore).then(() => entry.principal);
  }

  /** See `reauthenticate` below. */
  reauthenticate(req: FastifyRequest): Promise<Principal> {
    return reauthenticate(this, req);
  }

  /**
   * The onRequest hook: authentication (401) then the route's declared access (403). Returns a
   * promise only when authentication has to wait (see `authenticate`).
   */
  enforce(req: FastifyRequest): void | Promise<void> {
    const declared = accessOf(req.routeOptions.config);
    if (!declared || declared.public) return;
    const ip = req.ip;
    const header = req.headers.authorization;
    const guard = this.deps.guard;
    let principal: Principal | Promise<Principal>;
    try {
      principal = this.resolve(header, ip, guard);
    } catch (e) {
      if (header && guard && scored(e)) guard.fail(ip);
      throw e;
    }
    if (principal instanceof Promise) {
      return principal.then(
        (p) => this.admit(req, declared, p),
        (e: unknown) => {
          if (guard && scored(e)) guard.fail(ip);
          throw e;
        },
      );
    }
    this.admit(req, declared, principal);
  }

  /** Constant-time comparison with API_KEY (false when it is unset). */
  private matchesAdminKey(value: string): boolean {
    const key = this.adminKey;
    if (key === null) return false;
    const candidate = Buffer.from(value);
    if (candidate.length !== key.length) {
      // Still spend a comparison of the key's length, so that timing does not tell it.
      timingSafeEqual(key, key);
      return false;
    }
    return timingSafeEqual(candidate, key);
  }

  private admit(req: FastifyRequest, declared: Access, principal: Principal): void {
    this.check(declared, principal);
    req.principal = principal;
  }

  /** 403 when the principal's kind does not pass the declared access. */
  check(declared: Access, principal: Principal): void {
    if (allows(declared, principalKind(principal))) {
      if (declared.admins && principal.type === 'user' && principal.user.role !== 'admin') throw new ForbiddenError('this operation needs an administrator');
      return;
    }
    if (principal.type === 'user' && principal.via !== 'jwt' && declared.token) {
      // RFC 6750 §3.1 / RFC 9728 §5.1: tell the client which scope to ask for.
      throw new AppError(403, 'insufficient_scope', 'Forbidden', denial(declared, principal), [], {
        'www-authenticate': insufficientScopeChallenge(declared.token, this.deps.resourceMetadataUrl),
      });
    }
    throw new ForbiddenError(denial(declared, principal));
  }
}

/** Whether a rejection counts against the address: a made-up credential, not a lapsed one. */
function scored(e: unknown): boolean {
  return e instanceof UnauthorizedError && !(e instanceof LapsedCredentialError);
}

/**
 * The request's credential checked again, as on arrival (401/403 once it no longer holds), for
 * long-lived responses such as the live log stream; returns the principal as it is now.
 */
export async function reauthenticate(auth: Authenticator, req: FastifyRequest): Promise<Principal> {
  const declared = accessOf(req.routeOptions.config);
  if (!declared) throw new Error('route without declared access');
  const principal = await auth.authenticate(req.headers.authorization, req.ip);
  auth.check(declared, principal);
  return principal;
}

function denial(a: Access, p: Principal): string {
  if (p.type === 'api-key') return 'the admin API key does not grant this operation';
  if (p.via === 'jwt') return a.jwt === false ? 'the web UI session is not accepted here; use a personal access token or an OAuth access token' : 'this operation needs an administrator';
  if (a.token === false) return 'access tokens cannot be used for this operation; use the web UI session';
  return `this operation needs a token with the "${a.token}" scope`;
}
