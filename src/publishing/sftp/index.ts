import pino from 'pino';
import type { Config } from '../../infra/config.js';
import type { FailureLimiterOptions } from '../../infra/failure-limiter.js';
import { localStorage } from '../../infra/storage-local.js';
import { openPublishingDatabase } from '../db.js';
import { filesRepository } from '../files/repository.js';
import { filesService } from '../files/service.js';
import { productsRepository } from '../products/repository.js';
import { productService } from '../products/service.js';
import { type HostKey, hostKeyDir, loadOrCreateHostKeys } from './host-keys.js';
import { createSftpServer } from './server.js';

export interface RunningSftp {
  host: string;
  port: number;
  hostKeys: HostKey[];
  close(): Promise<void>;
}

/** Temporary files untouched this long are leftovers of a killed process, not live uploads. */
const STALE_UPLOAD_MS = 60 * 60_000;

/** The `sftp` part of `pier serve`: its own database handle, the shared storage, the host keys. */
export async function startSftp(
  config: Config,
  options: { port?: number; failureLimits?: Partial<FailureLimiterOptions> } = {},
): Promise<RunningSftp> {
  const { publishing } = config;
  const database = await openPublishingDatabase(publishing.databaseUrl);
  try {
    const storage = localStorage(publishing.storageDir);
    const files = filesService({ storage, repo: filesRepository(database.db, database), limits: publishing.limits });
    const products = productService({ repo: productsRepository(database.db, database.dialect), publishing });
    const hostKeys = loadOrCreateHostKeys(hostKeyDir(publishing.storageDir));
    const log = pino({ level: config.logLevel, name: 'sftp' });
    const removed = await storage.sweepTemporary('', STALE_UPLOAD_MS).catch(() => 0);
    if (removed) log.info({ removed }, 'removed stale temporary upload files');
    const server = createSftpServer({
      hostKeys,
      auth: { authenticateSftp: (u, p) => products.authenticateSftp(u, p) },
      files,
      log,
      maxSessionsPerProduct: publishing.sftpMaxSessions,
      ...(options.failureLimits ? { failureLimits: options.failureLimits } : {}),
    });
    const address = await server.listen(options.port ?? publishing.sftpPort, config.host);
    return {
      ...address,
      hostKeys,
      async close() {
        await server.close();
        await database.close();
      },
    };
  } catch (e) {
    await database.close();
    throw e;
  }
}
