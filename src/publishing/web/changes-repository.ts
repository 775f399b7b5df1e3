import type { Kysely } from 'kysely';
import { type ReadNow, withParameters } from '../../infra/database/index.js';
import type { PublishingDB } from '../db.js';

/** The pages' change counter (PageChangesTable in db.ts): its only SQL. */
export function pageChangesRepository(db: Kysely<PublishingDB>, hot: { readNow?: ReadNow } = {}) {
  // Read whenever a page request finds the last check too old (web/page-changes.ts): compiled
  // once, and on SQLite run synchronously when the connection is idle (no promise at all).
  const compiled = db.selectFrom('page_changes').select('seq').where('id', '=', 1).compile();
  const readNow = hot.readNow ?? (() => null);
  const seqOf = (rows: { seq: number }[]) => Number(rows[0]?.seq ?? 0);
  return {
    /** The counter now. */
    seq(): number | Promise<number> {
      const rows = readNow(compiled, [1]);
      if (rows) return seqOf(rows);
      return db.executeQuery(withParameters(compiled, [1])).then((r) => seqOf(r.rows));
    },
  };
}
