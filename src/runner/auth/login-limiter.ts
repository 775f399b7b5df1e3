import { TooManyRequestsError } from '../../infra/errors.js';
import { FailureLimiter } from '../../infra/failure-limiter.js';

export interface LoginLimits {
  /** Failed logins allowed for one account from one client address per window. */
  perPair: number;
  /** Failed logins allowed per client address per window, across accounts. */
  perAddress: number;
  /** Failed logins allowed per account per window from all addresses together: a ceiling against distributed guessing. */
  perAccount: number;
  windowMs: number;
}

/**
 * 100 per account: an attacker must spread guesses over at least 20 addresses within 15
 * minutes (each pair stops at 5) before the owner is locked out, and that lock never grows
 * beyond one window; meanwhile guessing one account stays below 10,000 tries a day, hopeless
 * against a password of at least 10 characters that is not on a list.
 */
export const DEFAULT_LOGIN_LIMITS: LoginLimits = { perPair: 5, perAddress: 20, perAccount: 100, windowMs: 15 * 60_000 };

/**
 * Failed logins per (account, address) pair, per address and per account. Once one reaches its
 * limit within the window, matching attempts (even with the right password) get 429 with
 * Retry-After. Five wrong passwords lock that account only from that address, so a stranger
 * cannot lock the owner out; the per-address limit stops one address guessing across accounts;
 * the per-account ceiling stops many addresses guessing one account. Pair and address locks
 * double for repeat offenders; the account lock lasts one window each time, so a sustained
 * attack cannot lock the owner out for longer. In memory: limits (and `clear`) are per instance.
 */
export class LoginLimiter {
  private readonly byPair: FailureLimiter;
  private readonly byAddress: FailureLimiter;
  private readonly byAccount: FailureLimiter;

  constructor(now: () => Date, limits: LoginLimits = DEFAULT_LOGIN_LIMITS) {
    const clock = () => now().getTime();
    const common = { windowMs: limits.windowMs, banMs: limits.windowMs, maxBanMs: 24 * 3_600_000, maxKeys: 50_000, now: clock };
    this.byPair = new FailureLimiter({ ...common, maxFailures: limits.perPair });
    this.byAddress = new FailureLimiter({ ...common, maxFailures: limits.perAddress });
    this.byAccount = new FailureLimiter({ ...common, maxBanMs: limits.windowMs, maxFailures: limits.perAccount });
  }

  /** Throws 429 when the pair, the address or the account is locked out. */
  check(address: string, account: string): void {
    const wait = Math.max(this.byPair.retryAfter(pairKey(account, address)), this.byAddress.retryAfter(address), this.byAccount.retryAfter(account));
    if (wait > 0) throw new TooManyRequestsError('too many failed logins; try again later', wait);
  }

  fail(address: string, account: string): void {
    this.byPair.fail(pairKey(account, address));
    this.byAddress.fail(address);
    this.byAccount.fail(account);
  }

  /** The right password from this address: its earlier failures for the account were the owner's typos. */
  succeed(address: string, account: string): void {
    this.byPair.reset(pairKey(account, address));
  }

  /** An administrator lifts every lock of an account (from every address, and its ceiling). */
  clear(account: string): void {
    const prefix = pairKey(account, '').slice(0, -2); // `["<account>","`
    this.byPair.resetWhere((key) => key.startsWith(prefix));
    this.byAccount.reset(account);
  }
}

/** JSON quotes both parts, so no account or address can make another pair's key, or its prefix. */
function pairKey(account: string, address: string): string {
  return JSON.stringify([account, address]);
}
