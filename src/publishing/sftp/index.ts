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
import { trustRepository } from '../trust/repository.js';
import { trustedCredentialState, trustService } from '../trust/service.js';
import { type HostKey, hostKeyDir, loadOrCreateHostKeys } from './host-keys.js';
import { sftpRepository } from './repository.js';
import { createSftpServer, type SftpServerOptions } from './server.js';

/** Caps and intervals a test may set (production uses the server's defaults). */
export type SftpTuning = Partial<Pick<SftpServerOptions, 'maxConnections' | 'maxPendingLogins' | 'maxPendingPerAddress' | 'credentialCheckMs' | 'pacing'>>;

export interface RunningSftp {
  host: string;
  port: number;
  hostKeys: HostKey[];
  /** Requests of a product's sessions that waited for their turn (request pacing). */
  deferredRequests(productId: string): number;
  /** Stops taking connections; sessions end after their transfer, or after `drainMs` (0: now). */
  close(drainMs?: number): Promise<void>;
}

/**
 * Temporary files of uploads that ended without a commit or abort (a killed process, another
 * instance that is gone) are swept at start and this often; each sweep renews this instance's
 * lease on the shared storage (storage-local-temps.ts), which must happen well within the lease.
 */
const SWEEP_INTERVAL_MS = 5 * 60_000;

/** Marks a session's credential as a trusted-publishing credential id (a password hash never starts so). */
const TRUSTED_SESSION = 'trusted:';

/** The `sftp` part of `pier serve`: its own database handle, the shared storage, the host keys. */
export async function startSftp(
  config: Config,
  options: {
    port?: number;
    failureLimits?: Partial<FailureLimiterOptions>;
    tuning?: SftpTuning;
    /** Tests only: the clock of trusted publishing (credential expiry). */
    trustClock?: () => Date;
  } = {},
): Promise<RunningSftp> {
  const { publishing } = config;
  const database = await openPublishingDatabase(publishing.databaseUrl);
  let sweeping: BackgroundLoop | undefined;
  try {
    const storage = localStorage(publishing.storageDir);
    const files = filesService({ storage, repo: filesRepository(database.db, database), limits: publishing.limits });
    const productsRepo = productsRepository(database.db, database.dialect);
    // A trusted-publishing credential (pier_tp_…) is also the password of its product's user.
    const trustClock = options.trustClock ?? (() => new Date());
    const trust = trustService({ repo: trustRepository(database.db), products: productsRepo, oidc: publishing.oidc, now: trustClock });
    const products = productService({ repo: productsRepo, publishing, trust });
    const sftpRepo = sftpRepository(database.db, database);
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
      auth: {
        async authenticateSftp(username, password) {
          const login = await products.authenticateSftpLogin(username, password);
          if (!login) return null;
          // A trusted credential's session lasts while the credential does: it expires after its
          // 15 minutes (transfers in progress finish), and is revoked when staff remove its
          // binding or rotate the product's secrets (the session ends at once).
          if (login.publisher) return { id: login.product.id, credential: `${TRUSTED_SESSION}${login.publisher.credentialId}`, kind: 'trusted' as const };
          // The password's hash (new salt on every rotation) tells a session its password changed.
          return { id: login.product.id, credential: login.product.sftp_password_hash, kind: 'password' as const };
        },
        async sftpCredentialState(productId, credential) {
          if (credential.startsWith(TRUSTED_SESSION)) {
            const expiresAt = await sftpRepo.trustedCredentialExpiry(productId, credential.slice(TRUSTED_SESSION.length));
            return trustedCredentialState(expiresAt, trustClock());
          }
          return (await sftpRepo.credential(productId)) === credential ? 'current' : 'revoked';
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
      deferredRequests: (productId) => server.deferredRequests(productId),
      async close(drainMs = 0) {
        await sweeping?.stop();
        await server.close(drainMs);
        await database.close();
      },
    };
  } catch (e) {
    await sweeping?.stop();
    await database.close();
    throw e;
  }
}
