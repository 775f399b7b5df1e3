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
import { createSftpServer, type SftpServerOptions } from './server.js';

/** Caps and intervals a test may set (production uses the server's defaults). */
export type SftpTuning = Partial<Pick<SftpServerOptions, 'maxConnections' | 'maxPendingLogins' | 'maxPendingPerAddress' | 'credentialCheckMs'>>;

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
  options: { port?: number; failureLimits?: Partial<FailureLimiterOptions>; tuning?: SftpTuning } = {},
): Promise<RunningSftp> {
  const { publishing } = config;
  const database = await openPublishingDatabase(publishing.databaseUrl);
  try {
    const storage = localStorage(publishing.storageDir);
    const files = filesService({ storage, repo: filesRepository(database.db, database), limits: publishing.limits });
    const productsRepo = productsRepository(database.db, database.dialect);
    const products = productService({ repo: productsRepo, publishing });
    const hostKeys = loadOrCreateHostKeys(hostKeyDir(publishing.storageDir));
    const log = pino({ level: config.logLevel, name: 'sftp' });
    const removed = await storage.sweepTemporary('', STALE_UPLOAD_MS).catch(() => 0);
    if (removed) log.info({ removed }, 'removed stale temporary upload files');
    const server = createSftpServer({
      hostKeys,
      auth: {
        async authenticateSftp(username, password) {
          const row = await products.authenticateSftp(username, password);
          // The password's hash (new salt on every rotation) tells a session its password changed.
          return row ? { id: row.id, credential: row.sftp_password_hash } : null;
        },
        async sftpCredentialCurrent(productId, credential) {
          return (await productsRepo.find(productId))?.sftp_password_hash === credential;
        },
      },
      files,
      log,
      maxSessionsPerProduct: publishing.sftpMaxSessions,
      loginTimeoutSeconds: publishing.sftpLoginTimeoutSeconds,
      idleTimeoutSeconds: publishing.sftpIdleTimeoutSeconds,
      ...options.tuning,
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
