// SQLite files written by more than one process (`pier serve`'s web part beside the download
// host's and the SFTP server's own processes, the staff CLI): a write waits for another
// connection's write lock on timers, so the waiting process's event loop keeps serving, and a
// transaction that reads before it writes never fails because another process wrote between
// (sqlite-driver.ts). A second handle on the file stands for the other process.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../src/infra/database/index.js';
import { tempDir } from '../helpers/db.js';

interface Db {
  items: { id: number; note: string };
}

async function twoHandles(t: { after(f: () => Promise<void>): void }) {
  const file = path.join(tempDir('pier-lock-'), 'x.sqlite');
  const a = openDatabase<Db>(file);
  const b = openDatabase<Db>(file);
  t.after(async () => {
    await a.close();
    await b.close();
  });
  await sql`create table items (id integer primary key, note text not null)`.execute(a.db);
  return { a: a.db, b: b.db };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a write waits for the other handle to commit, and the event loop turns meanwhile', async (t) => {
  const { a, b } = await twoHandles(t);
  let released = false;
  // A holds the write lock across 300 ms of timers (as a transaction waiting on the loop does).
  const holder = a.transaction().execute(async (trx) => {
    await trx.insertInto('items').values({ id: 1, note: 'a' }).execute();
    await sleep(300);
    released = true;
  });
  await sleep(20);
  let turns = 0;
  const beat = setInterval(() => turns++, 10);
  try {
    await b.insertInto('items').values({ id: 2, note: 'b' }).execute();
  } finally {
    clearInterval(beat);
  }
  await holder;
  assert.ok(released, "b's write went through only after a's commit");
  // Waiting synchronously in SQLite would have frozen the loop: no beat, and a could never commit.
  assert.ok(turns >= 5, `${turns} turns of the loop while b waited`);
  assert.deepEqual((await b.selectFrom('items').select('id').orderBy('id').execute()).map((r) => r.id), [1, 2]);
});

test('a transaction that reads, then writes, succeeds though the other handle wrote in between', async (t) => {
  const { a, b } = await twoHandles(t);
  await a.insertInto('items').values({ id: 1, note: 'first' }).execute();
  const results = await Promise.allSettled(
    Array.from({ length: 20 }, (_, i) =>
      (i % 2 ? a : b).transaction().execute(async (trx) => {
        const n = (await trx.selectFrom('items').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n;
        await sleep(2);
        await trx.insertInto('items').values({ id: 100 + i, note: `after ${n}` }).execute();
      }),
    ),
  );
  assert.deepEqual(
    results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason)),
    [],
  );
  assert.equal((await a.selectFrom('items').select('id').execute()).length, 21);
});

test('a lock held past the wait answers 503 with Retry-After, never a 500', async () => {
  const { toProblem } = await import('../../src/infra/http.js');
  const busy = Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
  const { problem, headers } = toProblem(busy);
  assert.deepEqual([problem.status, problem.code, headers['retry-after']], [503, 'unavailable', '1']);
});
