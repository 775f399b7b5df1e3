import type { Database } from '../../infra/database/index.js';
import type { PublishingDB } from '../db.js';
import { type CounterLog, type DownloadCounter, downloadCounter } from './counter.js';
import { downloadCountsRepository } from './repository.js';

/**
 * The download host's counting on an open publishing database (downloads/index.ts): the
 * counter to give the server, and `close` to call once the server has stopped (the last flush;
 * a failure is logged, never thrown: the host stops either way).
 */
export function downloadCounting(database: Pick<Database<PublishingDB>, 'db'>, log: CounterLog): { counter: DownloadCounter; close(): Promise<void> } {
  const counter = downloadCounter({ repo: downloadCountsRepository(database.db), log });
  return {
    counter,
    async close() {
      await counter.close().catch(() => {});
    },
  };
}
