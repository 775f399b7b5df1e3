import { type Kysely, sql } from 'kysely';
import type { DialectName } from '../../infra/database/index.js';
import type { PublishingDB } from '../db.js';

/** What the download host reads of label notices (notices/withdrawn.ts): its only SQL. */
export function noticesRepository(db: Kysely<PublishingDB>, dialect: DialectName) {
  // Only the `labels` part of the fields leaves the database (a changelog can be 512 KiB).
  const labels = dialect === 'postgres' ? sql<string | null>`(fields::jsonb -> 'labels')::text` : sql<string | null>`json_extract(fields, '$.labels')`;
  return {
    /** The pages' change counter (web/page-changes.ts): raised by every write to products. */
    async changeSeq(): Promise<number> {
      const row = await db.selectFrom('page_changes').select('seq').where('id', '=', 1).executeTakeFirst();
      return Number(row?.seq ?? 0);
    },

    /**
     * The notices (JSON text) of products that may have a withdrawn label: the text filter is a
     * cheap superset (a message may contain the word), the caller reads the statuses.
     */
    async withdrawnCandidates(): Promise<{ id: string; labels: string }[]> {
      const rows = await db
        .selectFrom('products')
        .select(['id', labels.as('labels')])
        .where('fields', 'like', '%"withdrawn"%')
        .execute();
      return rows.filter((r): r is { id: string; labels: string } => typeof r.labels === 'string');
    },
  };
}
