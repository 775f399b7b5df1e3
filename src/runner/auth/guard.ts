import { TooManyRequestsError } from '../../infra/errors.js';
import { FailureLimiter } from '../../infra/failure-limiter.js';

export interface CredentialGuardLimits {
  /** Rejected credentials (ApiKey or Bearer) allowed per client address per window. */
  perAddress: number;
  windowMs: number;
}

/**
 * Rejected credentials scored per client address, like failed logins (login-limiter.ts): an
 * address that keeps presenting wrong API keys, tokens or JWTs gets 429 with Retry-After, even
 * for a right one, so keys cannot be guessed at request speed. More generous than logins: a
 * misconfigured executor retries on its own and must not lock its network out for long.
 * Requests without credentials are not scored: they guess nothing; nor are genuine credentials
 * that lapsed (authenticate.ts, LapsedCredentialError), nor the right admin key, which passes
 * before the guard.
 */
export const DEFAULT_GUARD_LIMITS: CredentialGuardLimits = { perAddress: 50, windowMs: 15 * 60_000 };

export class CredentialGuard {
  private readonly byAddress: FailureLimiter;

  constructor(now: () => Date, limits: CredentialGuardLimits = DEFAULT_GUARD_LIMITS) {
    this.byAddress = new FailureLimiter({
      maxFailures: limits.perAddress,
      windowMs: limits.windowMs,
      banMs: limits.windowMs,
      maxBanMs: 24 * 3_600_000,
      maxKeys: 50_000,
      now: () => now().getTime(),
    });
  }

  /** Throws 429 while the address is banned. */
  check(address: string): void {
    const wait = this.byAddress.retryAfter(address);
    if (wait > 0) throw new TooManyRequestsError('too many rejected credentials from this address; try again later', wait);
  }

  fail(address: string): void {
    this.byAddress.fail(address);
  }
}
