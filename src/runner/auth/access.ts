/**
 * The one permission table of the runner API. Every route declares an `Access`; one
 * onRequest hook enforces it (auth/authenticate.ts) and the OpenAPI document shows the same
 * declaration as `security` plus the `x-pier-access` extension (api/openapi.ts).
 */
export interface Access {
  /** No credentials needed; any Authorization header is ignored. */
  public?: true;
  /** Web-UI session (`Authorization: Bearer <JWT>`): any user, admins only, or not accepted. */
  jwt: false | 'user' | 'admin';
  /**
   * Personal and OAuth access tokens (`Authorization: ApiKey|Bearer rnr_pat_…|rnr_oat_…`): the least
   * scope needed, or not accepted. Tokens never reach profile, credentials, tokens or admin routes.
   */
  token: false | 'read' | 'write';
  /** The admin API key (`Authorization: ApiKey <API_KEY>`): executors and run operations. */
  apiKey: boolean;
  /** Users (session or token) must be administrators; `jwt: 'admin'` says the same for sessions alone. */
  admins?: true;
}

export const PUBLIC: Access = { public: true, jwt: false, token: false, apiKey: false };
/** Profile, credentials and token management: the signed-in user only, never a token. */
export const SESSION_ONLY: Access = { jwt: 'user', token: false, apiKey: false };
/** Account-wide and project reads (`GET /api/me`, `GET /api/projects`, project resources). */
export const USER_READ: Access = { jwt: 'user', token: 'read', apiKey: false };
/** "Who am I": every valid credential may ask what it is (`GET /api/me`). */
export const IDENTITY: Access = { jwt: 'user', token: 'read', apiKey: true };
/** Creating, changing, deleting project resources. */
export const USER_WRITE: Access = { jwt: 'user', token: 'write', apiKey: false };
/** Run reads: users by project membership, and the admin key. */
export const RUN_READ: Access = { jwt: 'user', token: 'read', apiKey: true };
/** Run operations (start excluded: that is a project write): users with write, and the admin key. */
export const RUN_WRITE: Access = { jwt: 'user', token: 'write', apiKey: true };
/** User administration: admin users in the web UI only. */
export const ADMIN_ONLY: Access = { jwt: 'admin', token: false, apiKey: false };
/**
 * Lifting login locks: an admin user's session, or the admin key (the operator's way in when
 * the account-wide ceiling has locked every administrator out).
 */
export const LOGIN_LIMITS_ADMIN: Access = { jwt: 'admin', token: false, apiKey: true };
/** Executor protocol and management: the admin key or an admin user's session. */
export const EXECUTORS: Access = { jwt: 'admin', token: false, apiKey: true };
/** Reading executors: as EXECUTORS, and also an administrator's token with read scope (MCP assistants). */
export const EXECUTORS_READ: Access = { jwt: 'admin', token: 'read', apiKey: true, admins: true };
/**
 * The MCP endpoint: personal and OAuth access tokens only (what MCP clients hold); each tool
 * then declares one of the accesses above and is checked against it (runner/mcp/tools.ts).
 */
export const MCP_ENDPOINT: Access = { jwt: false, token: 'read', apiKey: false };

export type PrincipalKind = 'jwt-admin' | 'jwt-member' | 'api-key' | 'token-read' | 'token-write';

/** Whether a principal of this kind passes the route-level check (project membership comes after). */
export function allows(access: Access, kind: PrincipalKind): boolean {
  if (access.public) return true;
  switch (kind) {
    case 'api-key':
      return access.apiKey;
    case 'jwt-admin':
      return access.jwt !== false;
    case 'jwt-member':
      return access.jwt === 'user';
    case 'token-read':
      return access.token === 'read';
    case 'token-write':
      return access.token === 'read' || access.token === 'write';
  }
}

export const SCHEMES = {
  jwt: 'jwt',
  pat: 'personalAccessToken',
  oauth: 'oauthAccessToken',
  apiKey: 'adminApiKey',
} as const;

/** The OpenAPI `security` requirement list of an access declaration (alternatives, OR). */
export function securityOf(access: Access): Record<string, string[]>[] {
  if (access.public) return [];
  const out: Record<string, string[]>[] = [];
  if (access.jwt) out.push({ [SCHEMES.jwt]: access.jwt === 'admin' ? ['admin'] : [] });
  if (access.token) {
    out.push({ [SCHEMES.pat]: [access.token] });
    out.push({ [SCHEMES.oauth]: [access.token] });
  }
  if (access.apiKey) out.push({ [SCHEMES.apiKey]: [] });
  return out;
}

export const CHALLENGE = 'ApiKey realm="runner", Bearer realm="runner"';

/**
 * The 401 challenge. With the RFC 9728 metadata URL, the Bearer challenge carries
 * `resource_metadata` (RFC 9728 §5.1) so OAuth clients (MCP) find the authorization server.
 */
export function challengeFor(resourceMetadataUrl: string | undefined): string {
  if (!resourceMetadataUrl) return CHALLENGE;
  // Bearer first: MCP clients (the TypeScript SDK) read only a header that starts with it.
  // Several challenges in one header field: RFC 9110 §11.6.1.
  return `Bearer realm="runner", resource_metadata="${resourceMetadataUrl}", ApiKey realm="runner"`;
}

/** RFC 6750 §3.1: a token lacking the scope gets 403 with `error="insufficient_scope"`. */
export function insufficientScopeChallenge(scope: string, resourceMetadataUrl: string | undefined): string {
  const metadata = resourceMetadataUrl ? `, resource_metadata="${resourceMetadataUrl}"` : '';
  return `Bearer realm="runner", error="insufficient_scope", scope="${scope}"${metadata}`;
}
