import { type Kysely, sql } from 'kysely';
import { preparedRead, type ReadNow } from '../../infra/database/index.js';
import type { PublishingDB } from '../db.js';

/**
 * The one read the SFTP server makes on its own: a session's password check, asked before every
 * request that changes files (twice per uploaded file: at OPEN and at CLOSE). Compiled once and,
 * on an idle SQLite connection, run synchronously (`preparedRead`): through Kysely's query
 * builder it cost more than the rest of an OPEN's database work. It still reads the database
 * every time, so a rotation by `pier staff` or another instance counts at the next request.
 */
export function sftpRepository(db: Kysely<PublishingDB>, hot: { readNow?: ReadNow } = {}) {
  const credentialRead = preparedRead<{ hash: string }>(
    { db, readNow: hot.readNow ?? (() => null) },
    sql<{ hash: string }>`select sftp_password_hash as hash from products where id = ${''}`.compile(db),
  );
  return {
    /** The product's current SFTP password hash, null when the product is gone. */
    async credential(productId: string): Promise<string | null> {
      const [row] = await credentialRead([productId]);
      return row?.hash ?? null;
    },
  };
}
