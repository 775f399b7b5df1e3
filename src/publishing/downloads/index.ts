import pino from 'pino';
import type { Config } from '../../infra/config.js';
import { localStorage } from '../../infra/storage-local.js';
import { downloadCounting } from '../stats/counting.js';
import { createDownloadServer } from './server.js';
import { openPublishingDatabase } from '../db.js';
import { watchWithdrawnLabels } from '../notices/withdrawn.js';

export interface RunningDownloads {
  url: string;
  port: number;
  /** Stops taking connections; downloads in flight get `drainMs` to finish (0: cut now). */
  close(drainMs?: number): Promise<void>;
}

/** The `downloads` part of `pier serve`: the storage location, and the database (withdrawn labels, download counts). */
export async function startDownloads(config: Config, options: { port?: number } = {}): Promise<RunningDownloads> {
  const log = pino({ level: config.logLevel, name: 'downloads' });
  const database = await openPublishingDatabase(config.publishing.databaseUrl);
  const withdrawn = await watchWithdrawnLabels(database, { onError: (err) => log.error({ err }, 'reading withdrawn labels failed') }).catch(async (e: unknown) => {
    await database.close();
    throw e;
  });
  const counting = downloadCounting(database, log);
  const server = createDownloadServer({
    storage: localStorage(config.publishing.storageDir),
    log,
    logRequests: config.requestLog !== false,
    trustProxy: config.trustProxy,
    downloadUrl: config.publishing.downloadUrl,
    withdrawn,
    counter: counting.counter,
  });
  const address = await server.listen(options.port ?? config.publishing.downloadPort, config.host).catch(async (e: unknown) => {
    await withdrawn.close();
    await counting.close();
    await database.close();
    throw e;
  });
  return {
    url: address.url,
    port: address.port,
    async close(drainMs) {
      await server.close(drainMs);
      await withdrawn.close();
      // After the last download in flight, before the database closes: nothing counted is lost.
      await counting.close();
      await database.close();
    },
  };
}
