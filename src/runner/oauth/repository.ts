import type { Kysely, Selectable } from 'kysely';
import type { OAuthClientsTable, RunnerDB } from '../db/schema.js';

export type OAuthClientRow = Selectable<OAuthClientsTable>;

/** Registered OAuth clients (RFC 7591). */
export class OAuthClientsRepository {
  constructor(private readonly db: Kysely<RunnerDB>) {}

  async insert(row: OAuthClientRow): Promise<void> {
    await this.db.insertInto('oauth_clients').values(row).execute();
  }

  /** Creates or updates a client the runner registers itself (the docs client). */
  async upsert(row: OAuthClientRow): Promise<void> {
    await this.db
      .insertInto('oauth_clients')
      .values(row)
      .onConflict((oc) => oc.column('id').doUpdateSet({ redirect_uris: row.redirect_uris, name: row.name, scope: row.scope }))
      .execute();
  }

  findById(id: string): Promise<OAuthClientRow | undefined> {
    return this.db.selectFrom('oauth_clients').selectAll().where('id', '=', id).executeTakeFirst();
  }
}
