import { type Kysely, sql } from 'kysely';
import { preparedRead, type ReadNow } from '../../infra/database/index.js';
import type { PublishingDB } from '../db.js';

/**
 * The reads the SFTP server makes on its own: a session's credential check, asked before every
 * request that opens or changes files (twice per uploaded file: at OPEN and at CLOSE). Compiled
 * once and, on an idle SQLite connection, run synchronously (`preparedRead`): through Kysely's
 * query builder it cost more than the rest of an OPEN's database work. They still read the
 * database every time, so a rotation by `pier staff` or another instance counts at the next
 * request.
 */
export function sftpRepository(db: Kysely<PublishingDB>, hot: { readNow?: ReadNow } = {}) {
  const database = { db, readNow: hot.readNow ?? (() => null) };
  const credentialRead = preparedRead<{ hash: string }>(database, sql<{ hash: string }>`select sftp_password_hash as hash from products where id = ${''}`.compile(db));
  const trustedRead = preparedRead<{ expires_at: string }>(
    database,
    sql<{ expires_at: string }>`select expires_at from trusted_credentials where id = ${''} and product_id = ${''}`.compile(db),
  );
  return {
    /** The product's current SFTP password hash, null when the product is gone. */
    async credential(productId: string): Promise<string | null> {
      const [row] = await credentialRead([productId]);
      return row?.hash ?? null;
    },

    /**
     * When the product's trusted-publishing credential `credentialId` expires; null once it was
     * revoked (binding removed, the product's secrets rotated) or the product is gone.
     */
    async trustedCredentialExpiry(productId: string, credentialId: string): Promise<string | null> {
      const [row] = await trustedRead([credentialId, productId]);
      return row?.expires_at ?? null;
    },
  };
}
