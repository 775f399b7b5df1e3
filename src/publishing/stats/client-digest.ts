/**
 * A download as it is remembered for counting a file once per client and day (README "Download
 * counts"): HMAC-SHA-256 (RFC 2104) of the client and the file under a key drawn at random for
 * that UTC day, cut to 128 bits. Every download host sharing the database uses the day's one key
 * (the first host to need it stores it), so they agree on the digest; the key and the digests go
 * the day after (counter.ts), and with the key gone a digest says nothing about the address.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { DownloadCountsRepository } from './repository.js';

/** Bytes of the HMAC kept: 128 bits make an accidental collision of two clients' downloads on one day negligible. */
const DIGEST_BYTES = 16;

/** The digest of one client's download of one file (both joined by counter.ts), base64url: 22 characters. */
export function clientDigest(key: Buffer, entry: string): string {
  return createHmac('sha256', key).update(entry).digest().subarray(0, DIGEST_BYTES).toString('base64url');
}

export interface DayKeys {
  /** The key of `day` (`YYYY-MM-DD`): read once, then kept in memory for as long as the day is kept. */
  of(day: string): Promise<Buffer>;
  /** Drops the keys of days before `day` from memory. */
  forgetBefore(day: string): void;
}

export function dayKeys(repo: Pick<DownloadCountsRepository, 'dayKey'>): DayKeys {
  const keys = new Map<string, Buffer>();
  return {
    async of(day) {
      const known = keys.get(day);
      if (known) return known;
      const key = Buffer.from(await repo.dayKey(day, randomBytes(32).toString('hex')), 'hex');
      keys.set(day, key);
      return key;
    },
    forgetBefore(day) {
      for (const d of keys.keys()) if (d < day) keys.delete(d);
    },
  };
}
