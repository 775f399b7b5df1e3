import pino from 'pino';
import type { Config } from '../../infra/config.js';
import { BackgroundLoop } from '../../infra/background-loop.js';
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

/**
 * Temporary files of uploads that ended without a commit or abort (a killed process, another
 * instance that is gone) are swept at start and this often; each sweep renews this instance's
 * lease on the shared storage (storage-local.ts), which must happen well within the lease.
 */
const SWEEP_INTERVAL_MS = 5 * 60_000;

/** The `sftp` part of `pier serve`: its own database handle, the shared storage, the host keys. */
export async function startSftp(
  config: Config,
  options: { port?: number; failureLimits?: Partial<FailureLimiterOptions> } = {},
): Promise<RunningSftp> {
  const { publishing } = config;
  const database = await openPublishingDatabase(publishing.databaseUrl);
  let sweeping: BackgroundLoop | undefined;
  try {
    const storage = localStorage(publishing.storageDir);
    const files = filesService({ storage, repo: filesRepository(database.db, database), limits: publishing.limits });
    const products = productService({ repo: productsRepository(database.db, database.dialect), publishing });
    const hostKeys = loadOrCreateHostKeys(hostKeyDir(publishing.storageDir));
    const log = pino({ level: config.logLevel, name: 'sftp' });
    // A process killed between putting a file in place and committing its record left them
    // apart: records follow the disk again before any upload is taken.
    const reconciled = await files.reconcileAll((productId, err) => log.error({ productId, err }, 'reconcile of stored files failed'));
    for (const r of reconciled) log.warn(r, 'records of stored files reconciled with the disk');
    const sweep = async () => {
      const removed = await storage.sweepTemporary('');
      if (removed) log.info({ removed }, 'removed temporary files of uploads that ended without finishing');
    };
    await sweep().catch((e: unknown) => log.warn({ err: e }, 'sweep of temporary files failed'));
    sweeping = new BackgroundLoop({
      intervalMs: SWEEP_INTERVAL_MS,
      run: sweep,
      onError: (e) => log.warn({ err: e }, 'sweep of temporary files failed'),
    });
    sweeping.start();
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
        await sweeping?.stop();
        await server.close();
        await database.close();
      },
    };
  } catch (e) {
    await sweeping?.stop();
    await database.close();
    throw e;
  }
}
