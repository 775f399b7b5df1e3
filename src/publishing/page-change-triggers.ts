import { type Kysely, PostgresAdapter, sql } from 'kysely';

/** A table whose writes the public pages depend on, and the events that change what they show. */
export type WatchedTable = [table: string, events: string[]];

/**
 * Triggers that raise the pages' change counter (`page_changes`, migration 0009) on every write
 * to `watched`, by any process. On PostgreSQL they call `pier_page_changed()` (created by 0009):
 * deferred to COMMIT and once per transaction, so the counter's row is locked only while a
 * transaction commits. SQLite has one writer at a time: a plain row trigger cannot wait on anyone.
 */
export async function createPageChangeTriggers(db: Kysely<unknown>, watched: readonly WatchedTable[]): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  for (const [table, events] of watched) {
    if (postgres) {
      await sql
        .raw(`CREATE CONSTRAINT TRIGGER page_changes_${table} AFTER ${events.join(' OR ')} ON ${table}
          DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION pier_page_changed()`)
        .execute(db);
      continue;
    }
    for (const event of events) {
      await sql
        .raw(`CREATE TRIGGER page_changes_${table}_${event.toLowerCase()} AFTER ${event} ON ${table} BEGIN
          UPDATE page_changes SET seq = seq + 1 WHERE id = 1; END`)
        .execute(db);
    }
  }
}
