import pino from 'pino';
import type { Config } from '../../infra/config.js';
import { localStorage } from '../../infra/storage-local.js';
import { createDownloadServer } from './server.js';

export interface RunningDownloads {
  url: string;
  port: number;
  /** Stops taking connections; downloads in flight get `drainMs` to finish (0: cut now). */
  close(drainMs?: number): Promise<void>;
}

/** The `downloads` part of `pier serve`: needs only the storage location, no database. */
export async function startDownloads(config: Config, options: { port?: number } = {}): Promise<RunningDownloads> {
  const server = createDownloadServer({
    storage: localStorage(config.publishing.storageDir),
    log: pino({ level: config.logLevel, name: 'downloads' }),
    trustProxy: config.trustProxy,
    downloadUrl: config.publishing.downloadUrl,
  });
  const address = await server.listen(options.port ?? config.publishing.downloadPort, config.host);
  return { url: address.url, port: address.port, close: (drainMs) => server.close(drainMs) };
}
