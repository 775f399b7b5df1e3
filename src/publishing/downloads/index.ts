import pino from 'pino';
import type { Config } from '../../infra/config.js';
import { localStorage } from '../../infra/storage-local.js';
import { openPublishingDatabase } from '../db.js';
import { downloadCounting } from '../stats/counting.js';
import { createDownloadServer } from './server.js';

export interface RunningDownloads {
  url: string;
  port: number;
  /** Stops taking connections; downloads in flight get `drainMs` to finish (0: cut now). */
  close(drainMs?: number): Promise<void>;
}

/** The `downloads` part of `pier serve`: the storage location, and the database its download counts go to. */
export async function startDownloads(config: Config, options: { port?: number } = {}): Promise<RunningDownloads> {
  const log = pino({ level: config.logLevel, name: 'downloads' });
  const database = await openPublishingDatabase(config.publishing.databaseUrl);
  const counting = downloadCounting(database, log);
  const server = createDownloadServer({
    storage: localStorage(config.publishing.storageDir),
    log,
    trustProxy: config.trustProxy,
    downloadUrl: config.publishing.downloadUrl,
    counter: counting.counter,
  });
  const address = await server.listen(options.port ?? config.publishing.downloadPort, config.host);
  return {
    url: address.url,
    port: address.port,
    async close(drainMs) {
      await server.close(drainMs);
      // After the last download in flight, before the database closes: nothing counted is lost.
      await counting.close();
      await database.close();
    },
  };
}
