import fs from 'node:fs';
import { isPostgresUrl } from '../../infra/database/index.js';

/**
 * The "credentials changed" signal of every process that shares one SQLite runner database: an
 * append-only marker file beside the database whose size is the epoch. A write that weakens or
 * changes a credential or its user (revoke, password, role, profile, delete) commits, then appends
 * one byte; readers compare sizes with one fstat (~1 µs), where a database read costs 10-20 µs
 * on a busy server (bench/runner-auth.ts). Appends are atomic, so the epoch only grows.
 *
 * PostgreSQL deployments span hosts that share no file: there the epoch is always null and
 * nothing is cached, every request reads the database.
 */
export class CredentialEpoch {
  private constructor(private fd: number | null) {}

  static forDatabase(databaseUrl: string): CredentialEpoch {
    if (isPostgresUrl(databaseUrl) || databaseUrl === ':memory:') return new CredentialEpoch(null);
    return new CredentialEpoch(fs.openSync(`${databaseUrl}-credentials-epoch`, 'a', 0o600));
  }

  /** The current epoch, or null when caching is off. Read it before reading the database. */
  current(): number | null {
    return this.fd === null ? null : fs.fstatSync(this.fd).size;
  }

  /** Call after the change is committed. */
  bump(): void {
    if (this.fd !== null) fs.writeSync(this.fd, '.');
  }

  close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }
}

/**
 * Authentication look-ups remembered for as long as the epoch they were read at is current.
 * Only hits are kept (an unknown token always reads the database), and expiry is still checked
 * against the clock by the caller.
 */
export class CredentialCache<V> {
  private readonly entries = new Map<string, { value: V; epoch: number }>();
  private seenEpoch = -1;

  constructor(private readonly maxEntries = 10_000) {}

  get(key: string, epoch: number | null): V | undefined {
    if (epoch === null || epoch < this.seenEpoch) return undefined;
    this.forgetOlderThan(epoch);
    return this.entries.get(key)?.value;
  }

  set(key: string, value: V, epoch: number | null): void {
    // An epoch older than one already seen means a change landed meanwhile: do not keep it.
    if (epoch === null || epoch < this.seenEpoch) return;
    this.forgetOlderThan(epoch);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, { value, epoch });
  }

  private forgetOlderThan(epoch: number): void {
    if (epoch > this.seenEpoch) {
      this.entries.clear();
      this.seenEpoch = epoch;
    }
  }
}
