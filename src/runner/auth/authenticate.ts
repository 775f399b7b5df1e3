import type { FastifyContextConfig, FastifyRequest } from 'fastify';
import { ForbiddenError, UnauthorizedError } from '../../infra/errors.js';
import { constantTimeEqual, hasValidChecksum, sha256 } from '../../infra/secrets.js';
import type { UserRow } from '../users/repository.js';
import type { UsersRepository } from '../users/repository.js';
import { type Access, CHALLENGE, type PrincipalKind, allows } from './access.js';
import type { JwtSessions } from './jwt.js';
import type { OAuthTokensRepository, PersonalTokensRepository, TokenScope } from './repository.js';

export const PAT_PREFIX = 'rnr_pat_';
export const OAUTH_ACCESS_PREFIX = 'rnr_oat_';
/** Last use is written at most this often per token (Gitea: 30 s); it is a write on a hot path. */
export const LAST_USED_WINDOW_MS = 30_000;

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
}

function unauthorized(detail: string): UnauthorizedError {
  return new UnauthorizedError(detail, CHALLENGE);
}

export class Authenticator {
  constructor(private readonly deps: AuthDeps) {}

  /** Resolves the Authorization header to a principal; throws 401 for missing or invalid credentials. */
  async authenticate(header: string | undefined, ip: string): Promise<Principal> {
    if (!header) throw unauthorized('send credentials in the Authorization header (ApiKey <token> or Bearer <JWT>)');
    const space = header.indexOf(' ');
    const scheme = space < 0 ? header : header.slice(0, space);
    const value = space < 0 ? '' : header.slice(space + 1).trim();
    if (!value) throw unauthorized('the Authorization header has no credentials');
    switch (scheme.toLowerCase()) {
      case 'bearer':
        return this.session(value);
      case 'apikey':
        return this.apiKeyScheme(value, ip);
      default:
        throw unauthorized(`unsupported authorization scheme "${scheme}"; use ApiKey or Bearer`);
    }
  }

  private async session(token: string): Promise<Principal> {
    const claims = await this.deps.jwt.verify(token);
    if (!claims) throw unauthorized('the session token is invalid or expired; log in again');
    const user = await this.deps.users.findById(claims.sub);
    if (!user || user.session_epoch !== claims.sv) throw unauthorized('the session has ended; log in again');
    return { type: 'user', via: 'jwt', user };
  }

  private async apiKeyScheme(value: string, ip: string): Promise<Principal> {
    const { apiKey } = this.deps;
    if (value.startsWith(PAT_PREFIX)) return this.personalToken(value, ip);
    if (value.startsWith(OAUTH_ACCESS_PREFIX)) return this.oauthToken(value);
    if (apiKey !== null && constantTimeEqual(value, apiKey)) return { type: 'api-key' };
    throw unauthorized('the API key or token is not valid');
  }

  private async personalToken(token: string, ip: string): Promise<Principal> {
    // The checksum rejects typos and random strings without a database round trip.
    if (!hasValidChecksum(token, PAT_PREFIX)) throw unauthorized('the personal access token is malformed');
    const found = await this.deps.pats.findWithUser(sha256(token));
    const now = this.deps.now();
    const nowIso = now.toISOString();
    if (!found || found.token.revoked_at !== null) throw unauthorized('the personal access token is not valid or was revoked');
    const { token: row, user } = found;
    if (row.expires_at !== null && row.expires_at <= nowIso) throw unauthorized('the personal access token has expired');
    const notBefore = new Date(now.getTime() - LAST_USED_WINDOW_MS).toISOString();
    if (row.last_used_at === null || row.last_used_at < notBefore) {
      await this.deps.pats.touch(row.id, nowIso, ip, notBefore);
    }
    return { type: 'user', via: 'pat', user, scope: row.scope, tokenId: row.id };
  }

  private async oauthToken(token: string): Promise<Principal> {
    if (!hasValidChecksum(token, OAUTH_ACCESS_PREFIX)) throw unauthorized('the OAuth access token is malformed');
    const row = await this.deps.oauthTokens.findByHash(sha256(token));
    if (!row || row.revoked_at !== null) throw unauthorized('the OAuth access token is not valid or was revoked');
    if (row.expires_at <= this.deps.now().toISOString()) throw unauthorized('the OAuth access token has expired');
    const user = await this.deps.users.findById(row.user_id);
    if (!user) throw unauthorized('the OAuth access token is not valid');
    return { type: 'user', via: 'oauth', user, scope: row.scope, tokenId: row.id };
  }

  /** The onRequest hook: authentication (401) then the route's declared access (403). */
  async enforce(req: FastifyRequest): Promise<void> {
    const declared = accessOf(req.routeOptions.config);
    if (!declared || declared.public) return;
    const principal = await this.authenticate(req.headers.authorization, req.ip);
    const kind = principalKind(principal);
    if (!allows(declared, kind)) throw new ForbiddenError(denial(declared, principal));
    req.principal = principal;
  }
}

function denial(a: Access, p: Principal): string {
  if (p.type === 'api-key') return 'the admin API key does not grant this operation';
  if (p.via === 'jwt') return 'this operation needs an administrator';
  if (a.token === false) return 'access tokens cannot be used for this operation; use the web UI session';
  return `this operation needs a token with the "${a.token}" scope`;
}
