import { TooManyRequestsError } from '../../infra/errors.js';

interface Counter {
  failures: number;
  resetAt: number;
}

export interface LoginLimits {
  /** Failed logins allowed per client address per window. */
  perAddress: number;
  /** Failed logins allowed per account (email) per window, from any address. */
  perAccount: number;
  windowMs: number;
}

export const DEFAULT_LOGIN_LIMITS: LoginLimits = { perAddress: 20, perAccount: 5, windowMs: 15 * 60_000 };

/**
 * Counts failed logins per address and per account in fixed windows. Once either is exhausted,
 * every attempt (even with the right password) gets 429 with Retry-After until the window ends,
 * so guessing cannot continue from many addresses against one account, or from one address
 * against many accounts. Kept in memory: a limit per instance.
 */
export class LoginLimiter {
  private readonly byAddress = new Map<string, Counter>();
  private readonly byAccount = new Map<string, Counter>();

  constructor(
    private readonly now: () => Date,
    private readonly limits: LoginLimits = DEFAULT_LOGIN_LIMITS,
  ) {}

  /** Throws 429 when the address or the account is locked out. */
  check(address: string, account: string): void {
    const t = this.now().getTime();
    const a = this.live(this.byAddress, address, t);
    const u = this.live(this.byAccount, account, t);
    const waits: number[] = [];
    if (a && a.failures >= this.limits.perAddress) waits.push(a.resetAt - t);
    if (u && u.failures >= this.limits.perAccount) waits.push(u.resetAt - t);
    if (waits.length) {
      throw new TooManyRequestsError('too many failed logins; try again later', Math.max(...waits) / 1000);
    }
  }

  fail(address: string, account: string): void {
    const t = this.now().getTime();
    this.bump(this.byAddress, address, t);
    this.bump(this.byAccount, account, t);
  }

  succeed(account: string): void {
    this.byAccount.delete(account);
  }

  private live(map: Map<string, Counter>, key: string, t: number): Counter | undefined {
    const c = map.get(key);
    if (c && c.resetAt <= t) {
      map.delete(key);
      return undefined;
    }
    return c;
  }

  private bump(map: Map<string, Counter>, key: string, t: number): void {
    if (map.size > 50_000) {
      for (const [k, c] of map) if (c.resetAt <= t) map.delete(k);
    }
    const c = this.live(map, key, t);
    if (c) c.failures++;
    else map.set(key, { failures: 1, resetAt: t + this.limits.windowMs });
  }
}
