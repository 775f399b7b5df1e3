// A stats report is bounded whatever the number of labels a vendor's downloads spread over: at
// most MAX_DAYS days, days with installs only, a series for at most `top` labels and one
// `other` series for the rest; what it reads from the database is bounded the same way (rows
// counted below), and the product page's chart reads the same rolled-up days.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Database, migrate, openDatabase } from '../../../src/infra/database/index.js';
import { openPublishingDatabase, type PublishingDB, publishingMigrations } from '../../../src/publishing/db.js';
import { formatDay, parseDay } from '../../../src/publishing/stats/days.js';
import { type InstallsRepository, installsRepository } from '../../../src/publishing/stats/installs-repository.js';
import { type CountIncrement, downloadCountsRepository } from '../../../src/publishing/stats/repository.js';
import { DEFAULT_TOP, MAX_DAYS, statsService } from '../../../src/publishing/stats/service.js';
import { dialects } from '../../helpers/db.js';
import { type Site, startSite } from '../web/helpers.js';

/** Noon UTC on 27 November 2026. */
const NOW = Date.UTC(2026, 10, 27, 12);
const TODAY = parseDay('2026-11-27') as number;
const LABELS = 40;

/** Label i installed (i % 5) + 1 times on every other day of the last MAX_DAYS days, by one feature and sometimes its archive. */
function seed(productId: string, labels: number, first = 0): CountIncrement[] {
  const out: CountIncrement[] = [];
  for (let i = first; i < first + labels; i++) {
    for (let d = TODAY - (MAX_DAYS - 1); d <= TODAY; d += 2) {
      const day = formatDay(d);
      out.push({ productId, label: `l-${String(i).padStart(3, '0')}`, day, artifact: 'org.x.f', downloads: (i % 5) + 1 });
      out.push({ productId, label: `l-${String(i).padStart(3, '0')}`, day, artifact: 'org.x.g', downloads: 1 });
      if (i % 7 === 0) out.push({ productId, label: `l-${String(i).padStart(3, '0')}`, day, artifact: '#archive', downloads: 1 });
    }
  }
  return out;
}

/** Installs of label i on one of its days: max(f, g) + archive. */
const installsOf = (i: number) => (i % 5) + 1 + (i % 7 === 0 ? 1 : 0);

/** The repository, counting the rows each read hands back. */
function counted(repo: InstallsRepository): { repo: InstallsRepository; rows(): number; reset(): void } {
  let rows = 0;
  const count = <T>(p: Promise<T[]>) =>
    p.then((r) => {
      rows += r.length;
      return r;
    });
  const one = (p: Promise<number>) =>
    p.then((n) => {
      rows++;
      return n;
    });
  return {
    repo: {
      days: (...a) => count(repo.days(...a)),
      totalThrough: (...a) => one(repo.totalThrough(...a)),
      topLabels: (...a) => count(repo.topLabels(...a)),
      labelTotal: (...a) => one(repo.labelTotal(...a)),
      labelDays: (...a) => count(repo.labelDays(...a)),
    },
    rows: () => rows,
    reset() {
      rows = 0;
    },
  };
}

for (const dialect of dialects()) {
  describe(`stats reports are bounded (${dialect.name})`, () => {
    let db: { url: string; drop(): Promise<void> };
    let database: Database<PublishingDB>;
    let site: Site;
    let token: string;

    before(async () => {
      db = await dialect.create();
      site = await startSite(db.url, { statsClock: () => NOW });
      token = await site.register('many-labels');
      database = await openPublishingDatabase(db.url);
      await downloadCountsRepository(database.db).add(seed('many-labels', LABELS));
    });

    after(async () => {
      await database?.close();
      await site?.close();
      await db?.drop();
    });

    const expectedTotal = (labels: number) => Array.from({ length: labels }, (_, i) => installsOf(i)).reduce((a, b) => a + b, 0) * Math.ceil(MAX_DAYS / 2);

    test('the full range of many labels: top labels with their days, the rest summed into other, days with installs only', async () => {
      const from = formatDay(TODAY - (MAX_DAYS - 1));
      const res = await fetch(`${site.url}/api/products/many-labels/stats?from=${from}&to=2026-11-27`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 200);
      const body = (await res.json()) as {
        total: number;
        days: { day: string; installs: number }[];
        labels: { label: string; total: number; allTime: number; days: { day: string; installs: number }[] }[];
        other: { total: number; days: { day: string; installs: number }[] };
      };
      const activeDays = Math.ceil(MAX_DAYS / 2);
      assert.equal(body.total, expectedTotal(LABELS));
      assert.equal(body.days.length, activeDays, 'days without installs are left out');
      assert.equal(body.labels.length, DEFAULT_TOP);
      // The most installed of all first (5 + archive for i = 14, then the 5s by name…).
      const ranked = Array.from({ length: LABELS }, (_, i) => ({ label: `l-${String(i).padStart(3, '0')}`, all: installsOf(i) * activeDays })).sort(
        (a, b) => b.all - a.all || (a.label < b.label ? -1 : 1),
      );
      assert.deepEqual(
        body.labels.map((l) => [l.label, l.allTime, l.total, l.days.length]),
        ranked.slice(0, DEFAULT_TOP).map((r) => [r.label, r.all, r.all, activeDays]),
      );
      const shown = body.labels.reduce((a, l) => a + l.total, 0);
      assert.equal(body.other.total, body.total - shown);
      assert.equal(body.other.days.length, activeDays);
      for (const [k, d] of body.days.entries()) {
        const inLabels = body.labels.reduce((a, l) => a + (l.days[k]?.installs ?? 0), 0);
        assert.equal((body.other.days[k]?.installs ?? 0) + inLabels, d.installs, d.day);
      }
      // Every series together: at most (top + 2) × the range's days, whatever the number of labels.
      const entries = body.days.length + body.other.days.length + body.labels.reduce((a, l) => a + l.days.length, 0);
      assert.ok(entries <= (DEFAULT_TOP + 2) * MAX_DAYS, String(entries));
      // A longer range is refused.
      const longer = await fetch(`${site.url}/api/products/many-labels/stats?from=${formatDay(TODAY - MAX_DAYS)}&to=2026-11-27`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(longer.status, 400);
    });

    test('a report is built and serialized in the catalog worker, once for requests that ask for it together', async () => {
      const reads = site.service.catalogReads;
      assert.ok(reads);
      const before = reads.answered;
      const ask = () => fetch(`${site.url}/api/products/many-labels/stats?top=3&from=2026-01-01`, { headers: { authorization: `Bearer ${token}` } });
      const answers = await Promise.all([ask(), ask(), ask()]);
      const bodies = await Promise.all(answers.map((r) => r.text()));
      assert.deepEqual(
        answers.map((r) => [r.status, r.headers.get('content-type')]),
        Array.from({ length: 3 }, () => [200, 'application/json; charset=utf-8']),
      );
      assert.equal(new Set(bodies).size, 1);
      const body = JSON.parse(bodies[0]!) as { from: string; labels: unknown[] };
      assert.deepEqual([body.from, body.labels.length], ['2026-01-01', 3]);
      assert.equal(reads.answered, before + 1, 'one build in the worker for the three');
    });

    test('what a report reads does not grow with the number of labels', async () => {
      const reads = counted(installsRepository(database.db));
      const stats = statsService({ repo: reads.repo, now: () => NOW });
      const query = { from: formatDay(TODAY - (MAX_DAYS - 1)) };
      await stats.report('many-labels', query);
      const withFew = reads.rows();
      // Bounded by the top labels' days, the product's days and the labels' ranking.
      assert.ok(withFew <= (DEFAULT_TOP + 1) * MAX_DAYS + DEFAULT_TOP, String(withFew));
      // Three times as many labels, none installed more than the top ones: the same rows.
      await downloadCountsRepository(database.db).add(seed('many-labels', 2 * LABELS, LABELS).map((c) => ({ ...c, downloads: 1 })));
      reads.reset();
      const report = await stats.report('many-labels', query);
      assert.equal(reads.rows(), withFew);
      const added = Array.from({ length: 2 * LABELS }, (_, k) => 1 + ((LABELS + k) % 7 === 0 ? 1 : 0)).reduce((a, b) => a + b, 0);
      assert.equal(report.total, expectedTotal(LABELS) + added * Math.ceil(MAX_DAYS / 2));
      // The chart: 90 days and one total, whatever the labels.
      reads.reset();
      const chart = await stats.chart('many-labels');
      assert.equal(chart.days.length, 90);
      assert.ok(reads.rows() <= 90 + 1, String(reads.rows()));
      // Every seeded day is before today: the chart's total (through yesterday) is the report's.
      assert.equal(chart.through, '2026-11-26');
      assert.equal(chart.total, report.total);
      assert.equal(chart.days.filter((d) => d.installs > 0).length, 45);
    });

    test('the rolled-up installs agree with the counts they come from', async () => {
      // Computed again from download_counts by the definition (max feature + archive per label and day).
      const fromCounts = await database.db
        .selectFrom('download_counts')
        .select(['label', 'day', 'artifact', 'downloads'])
        .where('product_id', '=', 'many-labels')
        .execute();
      const perLabelDay = new Map<string, { max: number; archive: number }>();
      for (const r of fromCounts) {
        const k = `${r.label} ${r.day}`;
        const v = perLabelDay.get(k) ?? { max: 0, archive: 0 };
        if (r.artifact === '#archive') v.archive += Number(r.downloads);
        else v.max = Math.max(v.max, Number(r.downloads));
        perLabelDay.set(k, v);
      }
      const labelDays = await database.db.selectFrom('download_label_days').selectAll().where('product_id', '=', 'many-labels').execute();
      assert.equal(labelDays.length, perLabelDay.size);
      for (const r of labelDays) {
        const v = perLabelDay.get(`${r.label} ${r.day}`);
        assert.equal(Number(r.installs), (v?.max ?? -1) + (v?.archive ?? 0));
      }
      const totals = await database.db.selectFrom('download_label_totals').selectAll().where('product_id', '=', 'many-labels').execute();
      const days = await database.db.selectFrom('download_product_days').selectAll().where('product_id', '=', 'many-labels').execute();
      const sum = (rows: { installs: number | string }[]) => rows.reduce((a, r) => a + Number(r.installs), 0);
      assert.equal(totals.length, 3 * LABELS);
      assert.equal(sum(totals), sum(labelDays));
      assert.equal(sum(days), sum(labelDays));
    });
  });
}

for (const dialect of dialects()) {
  describe(`the installs rolled up from counts stored before (${dialect.name})`, () => {
    test('the migration fills them from download_counts', async () => {
      const handle = await dialect.create();
      const database = openDatabase<PublishingDB>(handle.url);
      try {
        await migrate(database.db, 'pier', Object.fromEntries(Object.entries(publishingMigrations).filter(([name]) => name < '0015')));
        const row = (label: string, day: string, artifact: string, downloads: number) => ({ product_id: 'p', label, day, artifact, downloads });
        await database.db
          .insertInto('download_counts')
          .values([row('5.4', '2026-11-26', 'f', 5), row('5.4', '2026-11-26', 'g', 3), row('5.4', '2026-11-26', '#archive', 2), row('5.5', '2026-11-26', 'f', 1), row('5.4', '2026-11-20', 'f', 4)])
          .execute();
        await migrate(database.db, 'pier', publishingMigrations);
        const installs = installsRepository(database.db);
        assert.deepEqual(await installs.days('p', '2026-11-01', '2026-11-30'), [
          { day: '2026-11-20', installs: 4 },
          { day: '2026-11-26', installs: 8 },
        ]);
        assert.deepEqual(await installs.topLabels('p', 5), [
          { label: '5.4', installs: 11 },
          { label: '5.5', installs: 1 },
        ]);
        // Later counts add to what the migration filled in.
        await downloadCountsRepository(database.db).add([{ productId: 'p', label: '5.4', day: '2026-11-26', artifact: 'f', downloads: 1 }]);
        assert.deepEqual(await installs.labelDays('p', ['5.4'], '2026-11-26', '2026-11-26'), [{ label: '5.4', day: '2026-11-26', installs: 8 }]);
        assert.equal(await installs.totalThrough('p', '2026-11-30'), 13);
      } finally {
        await database.close();
        await handle.drop();
      }
    });
  });
}
