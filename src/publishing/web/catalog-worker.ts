/**
 * The catalog's reading thread (web/catalog-reads.ts): comparisons of two labels (changes/
 * compare.ts), node searches (crawler/repository.ts `searchNodes`), download stats reports
 * (stats/report-answers.ts) and a product's label totals (files/repository.ts), through a database
 * connection of its own. Thousands of nodes are read, parsed, hashed or ranked here, never on
 * the serving event loop; it only reads, so its connection never holds a write lock the
 * serving one could wait for.
 */
import { parentPort } from 'node:worker_threads';
import { type Database, openDatabase } from '../../infra/database/index.js';
import { comparePage, type CompareOutcome, type DiffsKept, type SideRef } from '../changes/compare.js';
import { releaseNodesRepository } from '../changes/repository.js';
import { crawlsRepository, type NodeSearchFilter, type NodeSearchHit } from '../crawler/repository.js';
import type { PublishingDB } from '../db.js';
import { filesRepository, type LabelTotalsRow } from '../files/repository.js';
import { installsRepository } from '../stats/installs-repository.js';
import { buildReport, type ReportRequest } from '../stats/service.js';

export type CatalogJob =
  | { kind: 'compare'; databaseUrl: string; productId: string; from: SideRef; to: SideRef; page: number; version: string | null }
  | { kind: 'search'; databaseUrl: string; filter: NodeSearchFilter; limit: number }
  | { kind: 'stats'; databaseUrl: string; productId: string; request: ReportRequest }
  | { kind: 'labelTotals'; databaseUrl: string; productId: string };

export type CatalogReply = { ok: true; outcome: CompareOutcome } | { ok: true; hits: NodeSearchHit[] } | { ok: true; json: string } | { ok: true; totals: LabelTotalsRow[] } | { ok: false; message: string };

const port = parentPort;
let database: Database<PublishingDB> | null = null;
const kept: DiffsKept = new Map();
if (port) {
  port.on('message', async (job: CatalogJob) => {
    try {
      database ??= openDatabase<PublishingDB>(job.databaseUrl);
      if (job.kind === 'labelTotals') {
        const totals = await filesRepository(database.db).labelTotals(job.productId);
        port.postMessage({ ok: true, totals } satisfies CatalogReply);
        return;
      }
      if (job.kind === 'stats') {
        // Serialized here too: the serving loop only sends the text.
        const json = JSON.stringify(await buildReport(installsRepository(database.db), job.productId, job.request));
        port.postMessage({ ok: true, json } satisfies CatalogReply);
        return;
      }
      if (job.kind === 'search') {
        const hits = await crawlsRepository(database.db, database.dialect).searchNodes(job.filter, job.limit);
        port.postMessage({ ok: true, hits } satisfies CatalogReply);
        return;
      }
      const outcome = await comparePage(releaseNodesRepository(database.db), job.productId, job.from, job.to, job.page, job.version, kept);
      port.postMessage({ ok: true, outcome } satisfies CatalogReply);
    } catch (e) {
      port.postMessage({ ok: false, message: e instanceof Error ? e.message : String(e) } satisfies CatalogReply);
    }
  });
  port.postMessage('ready');
}
