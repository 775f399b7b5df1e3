/** Paths of the authorization server's endpoints, relative to RUNNER_URL. */
export const OAUTH_PATHS = {
  authorizationServerMetadata: '/.well-known/oauth-authorization-server',
  protectedResourceMetadata: '/.well-known/oauth-protected-resource',
  /** RFC 9728 §3.1: the metadata of the resource RUNNER_URL/mcp, at the well-known path plus its path. */
  mcpResourceMetadata: '/.well-known/oauth-protected-resource/mcp',
  authorize: '/oauth/authorize',
  token: '/oauth/token',
  register: '/oauth/register',
  revoke: '/oauth/revoke',
} as const;

/** The MCP endpoint (runner/mcp/routes.ts), a protected resource of its own (RFC 9728). */
export const MCP_PATH = '/mcp';

/** The interactive API documentation (api/openapi.ts serves it there). */
const DOCS_PATH = '/api/docs';

export const OAUTH_SCOPES = ['read', 'write'] as const;
export const CLIENT_AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post'] as const;

/**
 * Every URL below is built from RUNNER_URL (config), never from the request's Host or
 * X-Forwarded-* headers: RFC 8414 §3.3 requires `issuer` to equal the configured identifier
 * exactly, and a forged Host must not redirect clients elsewhere.
 */
export function authorizationServerMetadata(runnerUrl: string) {
  return {
    issuer: runnerUrl,
    authorization_endpoint: runnerUrl + OAUTH_PATHS.authorize,
    token_endpoint: runnerUrl + OAUTH_PATHS.token,
    registration_endpoint: runnerUrl + OAUTH_PATHS.register,
    revocation_endpoint: runnerUrl + OAUTH_PATHS.revoke,
    scopes_supported: [...OAUTH_SCOPES],
    // OAuth 2.1 §4.1: only the authorization code flow; no implicit, no password grant.
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    // OAuth 2.1 §4.1.1 / RFC 7636 §4.2: S256 only, `plain` is refused.
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    revocation_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    // RFC 9207 §3: the authorization response carries `iss`.
    authorization_response_iss_parameter_supported: true,
    service_documentation: runnerUrl + DOCS_PATH,
  };
}

/**
 * RFC 9728 §2: this API (or its MCP endpoint) as a protected resource, naming its authorization
 * server (itself). RFC 9728 §3.3: `resource` is exactly the URL the client asked, so the MCP
 * endpoint has metadata of its own.
 */
export function protectedResourceMetadata(runnerUrl: string, part: 'api' | 'mcp' = 'api') {
  return {
    resource: part === 'mcp' ? runnerUrl + MCP_PATH : runnerUrl,
    authorization_servers: [runnerUrl],
    scopes_supported: [...OAUTH_SCOPES],
    // RFC 9728 §2: tokens are accepted in the Authorization header only (never in URLs).
    bearer_methods_supported: ['header'],
    resource_name: part === 'mcp' ? 'Pier workflow runner (MCP)' : 'Pier workflow runner API',
    resource_documentation: runnerUrl + DOCS_PATH,
  };
}

export function resourceMetadataUrl(runnerUrl: string): string {
  return runnerUrl + OAUTH_PATHS.protectedResourceMetadata;
}

export function mcpResourceMetadataUrl(runnerUrl: string): string {
  return runnerUrl + OAUTH_PATHS.mcpResourceMetadata;
}
