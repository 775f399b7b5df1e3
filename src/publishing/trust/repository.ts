import type { Kysely } from 'kysely';
import type { PublishingDB } from '../db.js';
import type { TrustBindingsTable, TrustedCredentialsTable, TrustedPublishesTable } from '../tables/trust.js';

export type BindingRow = TrustBindingsTable;
export type CredentialRow = TrustedCredentialsTable;
export type PublishRow = TrustedPublishesTable;

/** Ends an exchange's transaction with a rollback and says why. */
class Outcome extends Error {
  constructor(readonly outcome: 'replayed' | 'owner_mismatch' | 'binding_gone') {
    super(outcome);
  }
}

/** All SQL of trusted publishing: bindings, credentials, used ID tokens, the publish history. */
export function trustRepository(db: Kysely<PublishingDB>) {
  return {
    async addBinding(row: BindingRow): Promise<void> {
      await db.insertInto('trust_bindings').values(row).execute();
    },

    async bindings(productId: string): Promise<BindingRow[]> {
      return db.selectFrom('trust_bindings').selectAll().where('product_id', '=', productId).orderBy('created_at').orderBy('id').execute();
    },

    async binding(productId: string, id: string): Promise<BindingRow | undefined> {
      return db.selectFrom('trust_bindings').selectAll().where('product_id', '=', productId).where('id', '=', id).executeTakeFirst();
    },

    /** Bindings of one provider that name this repository by id or by path (the candidates to explain a refusal). */
    async candidates(provider: BindingRow['provider'], repositoryId: string, repositoryLower: string): Promise<BindingRow[]> {
      return db
        .selectFrom('trust_bindings')
        .selectAll()
        .where('provider', '=', provider)
        .where((eb) => eb.or([eb('repository_id', '=', repositoryId), eb(eb.fn('lower', ['repository']), '=', repositoryLower)]))
        .orderBy('created_at')
        .orderBy('id')
        .limit(100)
        .execute();
    },

    /** Removes a binding and the credentials it issued (they stop working at once). */
    async removeBinding(productId: string, id: string): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        await trx.deleteFrom('trusted_credentials').where('binding_id', '=', id).where('product_id', '=', productId).execute();
        const r = await trx.deleteFrom('trust_bindings').where('product_id', '=', productId).where('id', '=', id).executeTakeFirst();
        return Number(r.numDeletedRows) > 0;
      });
    },

    /**
     * One exchange in one transaction: the ID token's key is taken (a replay when it was
     * already), the owner id pinned if the binding had none (trust on first use), then checked
     * against the fresh row, and the credential and its history row stored. Anything but 'ok'
     * writes nothing.
     */
    async exchange(input: {
      usedKey: string;
      usedUntil: string;
      now: string;
      /** Credentials that expired before this are forgotten (see EXPIRED_CREDENTIAL_KEPT_MS). */
      forgetExpiredBefore: string;
      ownerId: string;
      credential: CredentialRow;
      history: PublishRow;
    }): Promise<'ok' | 'replayed' | 'owner_mismatch' | 'binding_gone'> {
      try {
        return await db.transaction().execute(async (trx) => {
          // Keys of tokens that can no longer be presented are dropped: the table stays small.
          await trx.deleteFrom('oidc_used_tokens').where('expires_at', '<', input.now).execute();
          const taken = await trx
            .insertInto('oidc_used_tokens')
            .values({ key: input.usedKey, expires_at: input.usedUntil })
            .onConflict((oc) => oc.column('key').doNothing())
            .executeTakeFirst();
          if (Number(taken.numInsertedOrUpdatedRows ?? 0n) === 0) throw new Outcome('replayed');
          // Only where still unpinned: of two first exchanges at once, one pins, the other is checked.
          await trx
            .updateTable('trust_bindings')
            .set({ owner_id: input.ownerId, owner_pinned_at: input.now })
            .where('id', '=', input.credential.binding_id)
            .where('owner_id', 'is', null)
            .execute();
          const binding = await trx.selectFrom('trust_bindings').select('owner_id').where('id', '=', input.credential.binding_id).executeTakeFirst();
          if (!binding) throw new Outcome('binding_gone');
          if (binding.owner_id !== input.ownerId) throw new Outcome('owner_mismatch');
          await trx.deleteFrom('trusted_credentials').where('product_id', '=', input.credential.product_id).where('expires_at', '<', input.forgetExpiredBefore).execute();
          await trx.insertInto('trusted_credentials').values(input.credential).execute();
          await trx.insertInto('trusted_publishes').values(input.history).execute();
          return 'ok' as const;
        });
      } catch (e) {
        if (e instanceof Outcome) return e.outcome;
        throw e;
      }
    },

    /** The product's credentials that have not expired at `now` (a product has a handful at most). */
    async liveCredentials(productId: string, now: string): Promise<CredentialRow[]> {
      return db
        .selectFrom('trusted_credentials')
        .selectAll()
        .where('product_id', '=', productId)
        .where('expires_at', '>', now)
        .orderBy('expires_at', 'desc')
        .limit(1000)
        .execute();
    },

    async record(row: PublishRow): Promise<void> {
      await db.insertInto('trusted_publishes').values(row).execute();
    },

    async history(productId: string, limit: number): Promise<PublishRow[]> {
      return db
        .selectFrom('trusted_publishes')
        .selectAll()
        .where('product_id', '=', productId)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .execute();
    },
  };
}

export type TrustRepository = ReturnType<typeof trustRepository>;
