/**
 * The withdrawn labels, as the download host needs them: a Map lookup per request, kept current
 * by a background read of the publishing database. The read runs at most once per
 * REFRESH_MS and reads the products only when the page change counter (migration 0009, raised
 * in the same transaction as every write to `products`, by any process) moved since the last
 * one. A withdrawal or its undo, committed by any process, therefore takes effect on the download
 * host within about REFRESH_MS (plus the read itself): documented in the README.
 */
import { BackgroundLoop } from '../../infra/background-loop.js';
import type { Database } from '../../infra/database/index.js';
import type { PublishingDB } from '../db.js';
import { withdrawnOf } from './notices.js';
import { noticesRepository } from './repository.js';

export const REFRESH_MS = 1000;

export interface WithdrawnLabels {
  /** The product's withdrawn labels → replacement label (null: none), or undefined when it has none. */
  of(productId: string): ReadonlyMap<string, string | null> | undefined;
  /** Reads now (tests; start-up). */
  refresh(): Promise<void>;
  close(): Promise<void>;
}

/** Starts watching the withdrawn labels of the database `database` (read once before it returns). */
export async function watchWithdrawnLabels(
  database: Pick<Database<PublishingDB>, 'db' | 'dialect'>,
  options: { intervalMs?: number; onError?: (e: unknown) => void } = {},
): Promise<WithdrawnLabels> {
  const repo = noticesRepository(database.db, database.dialect);
  let byProduct = new Map<string, Map<string, string | null>>();
  let seenSeq: number | null = null;

  async function refresh(): Promise<void> {
    // The counter first: a change committed between the two reads is read again next time.
    const seq = await repo.changeSeq();
    if (seq === seenSeq) return;
    const next = new Map<string, Map<string, string | null>>();
    for (const row of await repo.withdrawnCandidates()) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(row.labels);
      } catch {
        continue;
      }
      const withdrawn = withdrawnOf(parsed);
      if (withdrawn.size) next.set(row.id, withdrawn);
    }
    byProduct = next;
    seenSeq = seq;
  }

  await refresh();
  const intervalMs = options.intervalMs ?? REFRESH_MS;
  const loop = new BackgroundLoop({ intervalMs, run: refresh, onError: options.onError ?? (() => {}) });
  loop.start();
  return {
    of: (productId) => byProduct.get(productId),
    refresh,
    close: () => loop.stop(),
  };
}
