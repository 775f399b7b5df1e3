// The "stats" attack of `npm run bench hostile-load` (run by bench/hostile-attack.ts): the
// hostile product gets STATS_LABELS labels installed every day of the longest range a report
// covers (written through the repository, as the download host would have over a year), then
// STATS_CLIENTS loops ask for its stats over that whole range, by turns for the default top
// labels, the most a report gives (top=25), and one label by name, for as long as the attack
// lasts. Before the reports were bounded one such answer held a zero-filled series per label
// per day (300 labels: 37.5 MB in 5.6 s on the serving loop).
import { openPublishingDatabase } from '../src/publishing/db.js';
import { dayOf, formatDay } from '../src/publishing/stats/days.js';
import { type CountIncrement, downloadCountsRepository } from '../src/publishing/stats/repository.js';
import { MAX_DAYS, MAX_TOP } from '../src/publishing/stats/service.js';

const STATS_LABELS = Number(process.env.BENCH_HOSTILE_STATS_LABELS ?? 300);
const STATS_CLIENTS = 4;
/** Increments written per transaction while seeding. */
const SEED_BATCH = 5_000;

export interface StatsPlan {
  webUrl: string;
  productId: string;
  token: string;
  /** The server's publishing database (its SQLite file). */
  databaseUrl: string;
}

export interface StatsReport {
  labels: number;
  seededDays: number;
  seedSeconds: number;
  requests: number;
  /** The largest answer, bytes. */
  largestBytes: number;
  longestMs: number;
  refused: string | null;
  error: string | null;
}

export const statsReport = (): StatsReport => ({ labels: 0, seededDays: 0, seedSeconds: 0, requests: 0, largestBytes: 0, longestMs: 0, refused: null, error: null });

const label = (i: number) => `l-${String(i).padStart(4, '0')}`;

/** Every label installed on every day of the last MAX_DAYS, by a feature and now and then an archive. */
export async function seedStats(plan: StatsPlan, report: StatsReport): Promise<void> {
  const started = Date.now();
  const database = await openPublishingDatabase(plan.databaseUrl);
  try {
    const repo = downloadCountsRepository(database.db);
    const today = dayOf(Date.now());
    let batch: CountIncrement[] = [];
    for (let i = 0; i < STATS_LABELS; i++) {
      for (let d = today - (MAX_DAYS - 1); d <= today; d++) {
        const day = formatDay(d);
        batch.push({ productId: plan.productId, label: label(i), day, artifact: 'org.hostile.f', downloads: 1 + ((i * 31 + d) % 17) });
        if ((i + d) % 5 === 0) batch.push({ productId: plan.productId, label: label(i), day, artifact: '#archive', downloads: 1 });
        if (batch.length >= SEED_BATCH) {
          await repo.add(batch);
          batch = [];
        }
      }
    }
    await repo.add(batch);
  } finally {
    await database.close();
  }
  report.labels = STATS_LABELS;
  report.seededDays = MAX_DAYS;
  report.seedSeconds = (Date.now() - started) / 1000;
}

/** STATS_CLIENTS loops of full-range stats requests until `live()` says stop. */
export async function statsAttack(plan: StatsPlan, live: () => boolean, report: StatsReport): Promise<void> {
  const to = formatDay(dayOf(Date.now()));
  const from = formatDay(dayOf(Date.now()) - (MAX_DAYS - 1));
  const queries = [`from=${from}&to=${to}`, `from=${from}&to=${to}&top=${MAX_TOP}`, `from=${from}&to=${to}&label=${label(7)}`];
  await Promise.all(
    Array.from({ length: STATS_CLIENTS }, async (_, client) => {
      for (let n = client; live(); n++) {
        const started = Date.now();
        const res = await fetch(`${plan.webUrl}/api/products/${plan.productId}/stats?${queries[n % queries.length]}`, { headers: { authorization: `Bearer ${plan.token}` } });
        const body = await res.arrayBuffer();
        if (!res.ok) {
          report.refused ??= `${res.status} ${Buffer.from(body).toString('utf8').slice(0, 200)}`;
          continue;
        }
        report.requests++;
        report.largestBytes = Math.max(report.largestBytes, body.byteLength);
        report.longestMs = Math.max(report.longestMs, Date.now() - started);
      }
    }),
  );
}

/** The attack's line in the bench's report. */
export function statsLine(r: StatsReport): string {
  return `  stats: ${r.labels} labels x ${r.seededDays} days seeded in ${r.seedSeconds.toFixed(0)} s; ${r.requests} full-range reports answered (largest ${(r.largestBytes / 1024).toFixed(0)} KiB, slowest ${r.longestMs} ms)${r.refused ? `; refused: ${r.refused}` : ''}${r.error ? `; stopped: ${r.error}` : ''}`;
}
