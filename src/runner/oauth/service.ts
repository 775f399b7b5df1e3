import { TooManyRequestsError } from '../../infra/errors.js';
import { FailureLimiter } from '../../infra/failure-limiter.js';
import { generateToken, randomId, sha256 } from '../../infra/secrets.js';
import { parseClientMetadata } from './client-metadata.js';
import type { OAuthClientsRepository } from './repository.js';

export const CLIENT_SECRET_PREFIX = 'rnr_ocs_';

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
  now: () => Date;
  registrationLimits?: RegistrationLimits;
}

/** The runner's OAuth 2.1 authorization server. */
export class OAuthService {
  private readonly registrations: FailureLimiter;

  constructor(private readonly d: OAuthDeps) {
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
}
