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

  async delete(id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('executors').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }
}
