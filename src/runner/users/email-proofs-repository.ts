import type { Kysely, Selectable } from 'kysely';
import { bumpCredentialEpoch } from '../auth/credential-cache.js';
import type { EmailProofsTable, RunnerDB } from '../db/schema.js';
import { isUniqueViolation } from '../db/index.js';

export type EmailProofRow = Selectable<EmailProofsTable>;

/** New addresses waiting for their proof: one per user, the link's token stored as SHA-256. */
export class EmailProofsRepository {
  constructor(private readonly db: Kysely<RunnerDB>) {}

  /** Stores the user's pending address, replacing an earlier one (whose link stops working). */
  async put(row: EmailProofRow): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('email_proofs').where('user_id', '=', row.user_id).execute();
      await trx.insertInto('email_proofs').values(row).execute();
    });
  }

  /**
   * Proof given: the user's address becomes the pending one and the proof is used up, in one
   * transaction. 'absent' when the user has no such live proof, 'taken' when another account
   * holds the address by now (the proof stays, unused).
   */
  async apply(userId: string, tokenHash: string, now: string): Promise<'applied' | 'absent' | 'taken'> {
    try {
      return await this.db.transaction().execute(async (trx) => {
        const proof = await trx
          .deleteFrom('email_proofs')
          .where('user_id', '=', userId)
          .where('token_hash', '=', tokenHash)
          .where('expires_at', '>', now)
          .returning('email')
          .executeTakeFirst();
        if (!proof) return 'absent' as const;
        await trx.updateTable('users').set({ email: proof.email, updated_at: now }).where('id', '=', userId).execute();
        // The cached principal carries the address (auth/credential-cache.ts).
        await bumpCredentialEpoch(trx);
        return 'applied' as const;
      });
    } catch (e) {
      if (isUniqueViolation(e)) return 'taken';
      throw e;
    }
  }
}
