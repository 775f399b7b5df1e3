/**
 * An OAuth protocol error, answered in the RFC 6749 §5.2 shape (`{error, error_description}`)
 * rather than problem+json: OAuth clients parse these fields. Registration errors use the same
 * shape (RFC 7591 §3.2.2).
 */
export class OAuthError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    description: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
    this.name = 'OAuthError';
  }

  body(): { error: string; error_description: string } {
    return { error: this.error, error_description: this.message };
  }
}

/** RFC 7591 §3.2.2 */
export function invalidClientMetadata(description: string): OAuthError {
  return new OAuthError(400, 'invalid_client_metadata', description);
}

/** RFC 7591 §3.2.2 */
export function invalidRedirectUri(description: string): OAuthError {
  return new OAuthError(400, 'invalid_redirect_uri', description);
}
