import pino from 'pino';
import type { Config } from '../../infra/config.js';
import { localStorage } from '../../infra/storage-local.js';
import { createDownloadServer } from './server.js';
import { openPublishingDatabase } from '../db.js';
import { watchWithdrawnLabels } from '../notices/withdrawn.js';

export interface RunningDownloads {
  url: string;
  port: number;
  /** Stops taking connections; downloads in flight get `drainMs` to finish (0: cut now). */
  close(drainMs?: number): Promise<void>;
}

/** The `downloads` part of `pier serve`: the storage location, and the database for withdrawn labels. */
export async function startDownloads(config: Config, options: { port?: number } = {}): Promise<RunningDownloads> {
  const log = pino({ level: config.logLevel, name: 'downloads' });
  const database = await openPublishingDatabase(config.publishing.databaseUrl);
  const withdrawn = await watchWithdrawnLabels(database, { onError: (err) => log.error({ err }, 'reading withdrawn labels failed') }).catch(async (e: unknown) => {
    await database.close();
    throw e;
  });
  const server = createDownloadServer({
    storage: localStorage(config.publishing.storageDir),
    log,
    trustProxy: config.trustProxy,
    downloadUrl: config.publishing.downloadUrl,
    withdrawn,
  });
  const address = await server.listen(options.port ?? config.publishing.downloadPort, config.host).catch(async (e: unknown) => {
    await withdrawn.close();
    await database.close();
    throw e;
  });
  return {
    url: address.url,
    port: address.port,
    async close(drainMs) {
      await server.close(drainMs);
      await withdrawn.close();
      await database.close();
    },
  };
}
