// The big node catalog attacks of `npm run bench hostile-load` ("catalog", "search"): a vendor
// whose product has 12 labels of 4,000 nodes (bench/hostile-catalog-data.ts) loops a PATCH of
// its page, a GET of that page and GETs of its changes page between ever other labels; an
// anonymous client loops node searches with ever other words. Set-up (`seedCatalog`,
// `readyCatalog`) runs in the bench's process; the attacks (`catalogAttacks`) in the attacker's.
//
// The nodes are stored through the repository the crawl uses (crawlsRepository.finish), not by
// crawling generated sites: a crawl of 48,000 node descriptions takes minutes. That is also past
// the default node limits (PIER_CRAWL_MAX_NODES, PIER_NODE_DATA_QUOTA), as on a service whose
// operators raised them: the pages must stay bounded whatever the catalog holds.
import { loadConfig } from '../src/infra/config.js';
import { crawlsRepository } from '../src/publishing/crawler/repository.js';
import { openPublishingDatabase } from '../src/publishing/db.js';
import { productsRepository } from '../src/publishing/products/repository.js';
import { catalogCrawl, catalogLabels, catalogNodes } from './hostile-catalog-data.js';
import { call, connectSftp, putFile } from './hostile-fixtures.js';
import { pierCli } from './lib.js';

export const CATALOG_LABELS = Number(process.env.BENCH_HOSTILE_CATALOG_LABELS ?? 12);
export const CATALOG_NODES = Number(process.env.BENCH_HOSTILE_CATALOG_NODES ?? 4_000);

/** What the attacker needs to know of the big catalog. */
export interface CatalogPlan {
  productId: string;
  token: string;
  labels: string[];
}

/** Registers the big catalog's product and stores its nodes (before the server starts: nothing else writes then). */
export async function seedCatalog(env: NodeJS.ProcessEnv): Promise<{ plan: CatalogPlan; sftp: { username: string; password: string }; seconds: number }> {
  const started = performance.now();
  const productId = 'catalog-ext';
  const creds = JSON.parse(pierCli(env, 'staff', 'register', productId, '--name', 'Big Catalog', '--json'));
  const labels = catalogLabels(CATALOG_LABELS);
  const database = await openPublishingDatabase(loadConfig({ ...process.env, ...env }).publishing.databaseUrl);
  try {
    // Live: node search covers live products only.
    await productsRepository(database.db, database.dialect).setState(productId, 'live', new Date().toISOString());
    const crawls = crawlsRepository(database.db, database.dialect);
    for (const [i, label] of labels.entries()) {
      const nodes = catalogNodes(productId, 'Big Catalog', label, i, CATALOG_NODES);
      await crawls.finish(catalogCrawl(productId, label, `http://bench/${productId}/${label}/`, nodes.length, 0), nodes, nodes.reduce((n, r) => n + r.data.length, 0));
    }
  } finally {
    await database.close();
  }
  return { plan: { productId, token: creds.editToken, labels }, sftp: creds.sftp, seconds: (performance.now() - started) / 1000 };
}

/**
 * Gives each label a file (so the page offers it), then waits until the automatic crawl has read
 * every label once (it finds no P2 metadata and keeps the stored nodes) and the pages are built.
 */
export async function readyCatalog(webUrl: string, sftpPort: number, seeded: Awaited<ReturnType<typeof seedCatalog>>): Promise<void> {
  const { plan, sftp } = seeded;
  const conn = await connectSftp(sftpPort, sftp.username, sftp.password);
  try {
    for (const label of plan.labels) {
      await call((cb) => conn.sftp.mkdir(`/update-site/${label}`, cb));
      await putFile(conn.sftp, `/update-site/${label}/p2.index`, Buffer.from('version=1\n'));
    }
  } finally {
    conn.end();
  }
  const auth = { authorization: `Bearer ${plan.token}` };
  for (const until = Date.now() + 180_000; ; ) {
    const res = await fetch(`${webUrl}/api/products/${plan.productId}/crawl`, { headers: auth });
    const body = (await res.json()) as { labels: { label: string; status: string; stale: boolean }[] };
    const done = body.labels.filter((c) => plan.labels.includes(c.label) && c.status === 'finished' && !c.stale).length;
    if (done === plan.labels.length) break;
    if (Date.now() > until) throw new Error(`the automatic crawl read ${done} of ${plan.labels.length} catalog labels in 180 s`);
    await new Promise((r) => setTimeout(r, 500));
  }
  for (const path of [`/product/${plan.productId}`, `/product/${plan.productId}/changes`, '/nodes?q=table']) {
    const res = await fetch(`${webUrl}${path}`);
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`GET ${path}: ${res.status}`);
  }
}

/** What the catalog attacks got done, printed by the attacker with the rest of its report. */
export const catalogReport = {
  catalog: { patches: 0, pages: 0, longestPageMs: 0, pageBytes: 0, changes: 0, longestChangesMs: 0, changesBytes: 0, unavailable: 0, waitingMs: 0, error: null as string | null },
  search: { queries: 0, longestMs: 0, hits: 0, unavailable: 0, waitingMs: 0, error: null as string | null },
};

const WORDS = ['table', 'column', 'filter', 'reader', 'writer', 'join', 'pivot', 'text', 'image', 'model', 'learner', 'predictor', 'chart', 'string', 'date', 'json', 'xml', 'database', 'cluster', 'score'];

/** A GET, timed; 503 (a worker's queue full, its time limit) is counted, anything else but 200 ends the attack. */
async function timedGet(url: string, waiting: (since: number) => void): Promise<{ ms: number; bytes: number; status: number; body: string }> {
  const since = Date.now();
  waiting(since);
  const res = await fetch(url);
  const body = await res.text();
  waiting(0);
  if (res.status !== 200 && res.status !== 503 && res.status !== 404) throw new Error(`GET ${url}: ${res.status} ${body.slice(0, 200)}`);
  return { ms: Date.now() - since, bytes: Buffer.byteLength(body), status: res.status, body };
}

let catalogWaiting = 0;
let searchWaiting = 0;

/** Says, at the deadline, how long a request still waited (the attacker reports and exits then). */
export function catalogDeadline(): void {
  if (catalogWaiting) catalogReport.catalog.waitingMs = Date.now() - catalogWaiting;
  if (searchWaiting) catalogReport.search.waitingMs = Date.now() - searchWaiting;
}

/** PATCH (a new description each time), GET the page, GET the changes page between ever other labels. */
async function catalogLoop(webUrl: string, plan: CatalogPlan, live: () => boolean): Promise<void> {
  const r = catalogReport.catalog;
  const n = plan.labels.length;
  for (let i = 0; live(); i++) {
    catalogWaiting = Date.now();
    const patch = await fetch(`${webUrl}/api/products/${plan.productId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${plan.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ description: `Nodes for everything, edition ${i}` }),
    });
    await patch.arrayBuffer();
    catalogWaiting = 0;
    if (!patch.ok) throw new Error(`PATCH: ${patch.status}`);
    r.patches++;
    const page = await timedGet(`${webUrl}/product/${plan.productId}`, (t) => (catalogWaiting = t));
    if (page.status === 503) r.unavailable++;
    else {
      r.pages++;
      r.longestPageMs = Math.max(r.longestPageMs, page.ms);
      r.pageBytes = Math.max(r.pageBytes, page.bytes);
    }
    const from = plan.labels[i % n] as string;
    const to = plan.labels[(i * 7 + 5) % n] as string;
    const changes = await timedGet(`${webUrl}/product/${plan.productId}/changes?from=${from}&to=${to}&page=${1 + (i % 3)}`, (t) => (catalogWaiting = t));
    if (changes.status === 503) r.unavailable++;
    else {
      r.changes++;
      r.longestChangesMs = Math.max(r.longestChangesMs, changes.ms);
      r.changesBytes = Math.max(r.changesBytes, changes.bytes);
    }
  }
}

/** Node searches with ever other words: two words, a two-letter prefix, a product filter. */
async function searchLoop(webUrl: string, plan: CatalogPlan, live: () => boolean): Promise<void> {
  const r = catalogReport.search;
  for (let i = 0; live(); i++) {
    const a = WORDS[i % WORDS.length] as string;
    const b = WORDS[(i * 7 + 3) % WORDS.length] as string;
    const q = [`${a} ${b}`, `${a.slice(0, 2)}`, `${a} ${i % 4000}`, `${b}&product=${plan.productId}`][i % 4];
    const res = await timedGet(`${webUrl}/nodes?q=${q}`, (t) => (searchWaiting = t));
    if (res.status === 503) r.unavailable++;
    else {
      r.queries++;
      r.longestMs = Math.max(r.longestMs, res.ms);
      r.hits += (res.body.match(/class="node-hit"/g) ?? []).length;
    }
  }
}

/** The attacks `wanted` of the two, each reporting its own failure. */
export function catalogAttacks(webUrl: string, plan: CatalogPlan | undefined, wanted: ReadonlySet<string>, live: () => boolean): Promise<void>[] {
  if (!plan) return [];
  const attempt = (name: keyof typeof catalogReport, work: () => Promise<void>) =>
    work().catch((e: unknown) => {
      catalogReport[name].error = String((e as Error)?.message ?? e).slice(0, 160);
    });
  return [wanted.has('catalog') ? attempt('catalog', () => catalogLoop(webUrl, plan, live)) : null, wanted.has('search') ? attempt('search', () => searchLoop(webUrl, plan, live)) : null].filter(
    (p): p is Promise<void> => p !== null,
  );
}

/** The report's lines for the two attacks. */
export function catalogLines(r: typeof catalogReport | undefined, attacks: readonly string[]): string[] {
  if (!r) return [];
  const kb = (n: number) => `${(n / 1024).toFixed(0)} KB`;
  return [
    attacks.includes('catalog') &&
      `  catalog (${CATALOG_LABELS} labels x ${CATALOG_NODES} nodes): ${r.catalog.patches} PATCHes, ${r.catalog.pages} page GETs (slowest ${(r.catalog.longestPageMs / 1000).toFixed(1)} s, largest ${kb(r.catalog.pageBytes)}), ${r.catalog.changes} changes pages (slowest ${(r.catalog.longestChangesMs / 1000).toFixed(1)} s, largest ${kb(r.catalog.changesBytes)}), ${r.catalog.unavailable} answered 503${r.catalog.waitingMs ? `, one GET unanswered after ${(r.catalog.waitingMs / 1000).toFixed(1)} s` : ''}${r.catalog.error ? `; stopped: ${r.catalog.error}` : ''}`,
    attacks.includes('search') &&
      `  search: ${r.search.queries} node searches (slowest ${(r.search.longestMs / 1000).toFixed(1)} s, ${r.search.hits} hits), ${r.search.unavailable} answered 503${r.search.waitingMs ? `, one unanswered after ${(r.search.waitingMs / 1000).toFixed(1)} s` : ''}${r.search.error ? `; stopped: ${r.search.error}` : ''}`,
  ].filter((l): l is string => typeof l === 'string');
}
