import { type Kysely, type Migration, sql } from 'kysely';

/**
 * Migration 0012: each label's platform range, as its latest crawl that replaced the
 * label's nodes computed it (OSGi notation; null: none found). Rows crawled before stay null
 * until the label is crawled again.
 */
export const platformRangesMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`ALTER TABLE crawls ADD COLUMN platform_range varchar(200)`.execute(db);
  },
};
