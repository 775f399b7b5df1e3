/**
 * Counts failed authentications per key (client address, account) and bans a key that fails
 * too often; each new ban of the same key lasts twice as long (SFTPGo's "defender" idea).
 * In memory per process: a ban is a brake on guessing, not shared state.
 */
export interface FailureLimiterOptions {
  maxFailures: number;
  windowMs: number;
  banMs: number;
  maxBanMs?: number;
  /** Upper bound of tracked keys so a flood of addresses cannot grow memory without limit. */
  maxKeys?: number;
  now?: () => number;
}

interface Entry {
  failures: number[];
  bannedUntil: number;
  bans: number;
}

export class FailureLimiter {
  private readonly entries = new Map<string, Entry>();
  private readonly now: () => number;

  constructor(private readonly options: FailureLimiterOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Seconds until `key` may try again, or 0 when it may try now. */
  retryAfter(key: string): number {
    const e = this.entries.get(key);
    if (!e) return 0;
    const left = e.bannedUntil - this.now();
    return left > 0 ? Math.ceil(left / 1000) : 0;
  }

  /** Records a failure; returns the ban in seconds if this failure caused one. */
  fail(key: string): number {
    const now = this.now();
    let e = this.entries.get(key);
    if (!e) {
      if (this.entries.size >= (this.options.maxKeys ?? 100_000)) this.prune(now);
      e = { failures: [], bannedUntil: 0, bans: 0 };
      this.entries.set(key, e);
    }
    e.failures = e.failures.filter((t) => now - t < this.options.windowMs);
    e.failures.push(now);
    if (e.failures.length >= this.options.maxFailures) {
      const ban = Math.min(this.options.banMs * 2 ** e.bans, this.options.maxBanMs ?? 3_600_000);
      e.bans++;
      e.bannedUntil = now + ban;
      e.failures = [];
      return Math.ceil(ban / 1000);
    }
    return 0;
  }

  /** Forgets `key` (a successful login clears the account's failures). */
  reset(key: string): void {
    this.entries.delete(key);
  }

  /** Forgets every key that `matches` (an administrator lifting all locks of one account). */
  resetWhere(matches: (key: string) => boolean): void {
    for (const key of this.entries.keys()) if (matches(key)) this.entries.delete(key);
  }

  private prune(now: number): void {
    for (const [key, e] of this.entries) {
      if (e.bannedUntil < now && e.failures.every((t) => now - t >= this.options.windowMs)) this.entries.delete(key);
    }
    // Still full: drop the oldest entries (Map keeps insertion order).
    const excess = this.entries.size - (this.options.maxKeys ?? 100_000) + 1;
    if (excess > 0) {
      let i = 0;
      for (const key of this.entries.keys()) {
        if (i++ >= excess) break;
        this.entries.delete(key);
      }
    }
  }
}
