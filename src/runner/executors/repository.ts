import type { Kysely, Selectable } from 'kysely';
import type { ExecutorsTable, RunnerDB } from '../db/schema.js';

export type ExecutorRow = Selectable<ExecutorsTable>;

export class ExecutorsRepository {
  constructor(private readonly db: Kysely<RunnerDB>) {}

  async insert(row: ExecutorRow): Promise<ExecutorRow> {
    await this.db.insertInto('executors').values(row).execute();
    return row;
  }

  findById(id: string): Promise<ExecutorRow | undefined> {
    return this.db.selectFrom('executors').selectAll().where('id', '=', id).executeTakeFirst();
  }

  list(): Promise<ExecutorRow[]> {
    return this.db.selectFrom('executors').selectAll().orderBy('name').orderBy('id').execute();
  }

  async heartbeat(id: string, now: string, ip: string): Promise<ExecutorRow | undefined> {
    await this.db.updateTable('executors').set({ last_heartbeat_at: now, last_ip: ip }).where('id', '=', id).execute();
    return this.findById(id);
  }

  /** Writes the fields of a registration over an existing executor; undefined when it is gone. */
  async reregister(id: string, fields: Pick<ExecutorRow, 'name' | 'labels' | 'capacity' | 'draining' | 'last_heartbeat_at' | 'last_ip'>): Promise<ExecutorRow | undefined> {
    await this.db.updateTable('executors').set(fields).where('id', '=', id).execute();
    return this.findById(id);
  }

  async setDraining(id: string, draining: boolean): Promise<ExecutorRow | undefined> {
    await this.db.updateTable('executors').set({ draining: draining ? 1 : 0 }).where('id', '=', id).execute();
    return this.findById(id);
  }

  /**
   * The labels registered executors have, distinct, sorted, the first `limit` (metrics: the
   * queue by label). Executors register with the admin key, so these are the operator's.
   */
  async labels(limit: number): Promise<string[]> {
    const rows = await this.db.selectFrom('executors').select('labels').distinct().execute();
    const labels = new Set<string>();
    for (const r of rows) for (const l of JSON.parse(r.labels) as unknown[]) if (typeof l === 'string') labels.add(l);
    return [...labels].sort().slice(0, limit);
  }

  /**
   * Executors by status, as ExecutorsService shows them: offline once the last heartbeat is
   * older than `staleBefore` (a whole lease ago), else draining or online.
   */
  async statusCounts(staleBefore: string): Promise<{ online: number; draining: number; offline: number }> {
    const r = await this.db
      .selectFrom('executors')
      .select((eb) => [
        eb.fn.countAll<number | string>().as('total'),
        eb.fn.count<number | string>(eb.case().when('last_heartbeat_at', '<', staleBefore).then(1).end()).as('offline'),
        eb.fn
          .count<number | string>(
            eb
              .case()
              .when(eb.and([eb('last_heartbeat_at', '>=', staleBefore), eb('draining', '=', 1)]))
              .then(1)
              .end(),
          )
          .as('draining'),
      ])
      .executeTakeFirstOrThrow();
    const offline = Number(r.offline);
    const draining = Number(r.draining);
    return { online: Number(r.total) - offline - draining, draining, offline };
  }

  async delete(id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('executors').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }
}
