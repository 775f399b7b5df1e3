import { TooManyRequestsError } from '../../infra/errors.js';
import { FailureLimiter } from '../../infra/failure-limiter.js';

export interface LoginLimits {
  /** Failed logins allowed per client address per window. */
  perAddress: number;
  /** Failed logins allowed per account (email) per window, from any address. */
  perAccount: number;
  windowMs: number;
}

export const DEFAULT_LOGIN_LIMITS: LoginLimits = { perAddress: 20, perAccount: 5, windowMs: 15 * 60_000 };

/**
 * Failed logins per address and per account. Once either reaches its limit within the window,
 * every attempt (even with the right password) gets 429 with Retry-After for a window's length
 * (longer for repeat offenders), so guessing cannot continue from many addresses against one
 * account, or from one address against many accounts. In memory: a limit per instance.
 */
export class LoginLimiter {
  private readonly byAddress: FailureLimiter;
  private readonly byAccount: FailureLimiter;

  constructor(now: () => Date, limits: LoginLimits = DEFAULT_LOGIN_LIMITS) {
    const clock = () => now().getTime();
    const common = { windowMs: limits.windowMs, banMs: limits.windowMs, maxBanMs: 24 * 3_600_000, maxKeys: 50_000, now: clock };
    this.byAddress = new FailureLimiter({ ...common, maxFailures: limits.perAddress });
    this.byAccount = new FailureLimiter({ ...common, maxFailures: limits.perAccount });
  }

  /** Throws 429 when the address or the account is locked out. */
  check(address: string, account: string): void {
    const wait = Math.max(this.byAddress.retryAfter(address), this.byAccount.retryAfter(account));
    if (wait > 0) throw new TooManyRequestsError('too many failed logins; try again later', wait);
  }

  fail(address: string, account: string): void {
    this.byAddress.fail(address);
    this.byAccount.fail(account);
  }

  succeed(account: string): void {
    this.byAccount.reset(account);
  }
}
