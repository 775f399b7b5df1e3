// The `folder-index` attack of `npm run bench hostile-load` (run by bench/hostile-attack.ts):
// anonymous clients paging, over and over, through the download host's HTML index of a folder
// of BENCH_HOSTILE_INDEX_ENTRIES (20,000) files, each client following the index's own "next"
// links to the last page and starting again. The vendor first uploads (staged outside
// update-site/, then moved in at once) a small valid update site whose `extra/` folder holds the
// files, and waits until the label's crawl is done, so the folder is served as users get it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type ssh2 from 'ssh2';
import { buildSite, exampleSpec } from '../test/helpers/p2-fixtures.js';
import { call, putFile } from './hostile-fixtures.js';

const ENTRIES = Number(process.env.BENCH_HOSTILE_INDEX_ENTRIES ?? 20_000);
/** Anonymous clients paging at once. */
const CLIENTS = Number(process.env.BENCH_HOSTILE_INDEX_CLIENTS ?? 4);
const LABEL = 'index';
/** SFTP requests in flight while the files are uploaded. */
const WINDOW = 64;

export interface FolderIndexPlan {
  webUrl: string;
  productId: string;
  token: string;
}

export const folderIndexReport = {
  entries: ENTRIES,
  clients: CLIENTS,
  /** Index pages answered, and full passes from the first page to the last. */
  pages: 0,
  passes: 0,
  slowestMs: 0,
  failed: null as string | null,
  error: null as string | null,
};

/** The attack's line in the bench's report. */
export function folderIndexLine(r: typeof folderIndexReport): string {
  return `  folder-index: ${r.clients} anonymous clients paging the index of a ${r.entries.toLocaleString('en')}-entry folder: ${r.pages} pages, ${r.passes} full passes${r.pages ? ` (slowest page ${r.slowestMs.toFixed(0)} ms)` : ''}${r.failed ? `; a page failed: ${r.failed}` : ''}${r.error ? `; stopped: ${r.error}` : ''}`;
}

async function mkdirs(sftp: ssh2.SFTPWrapper, dirs: string[]): Promise<void> {
  for (const d of dirs) await call((cb) => sftp.mkdir(d, cb)).catch(() => {});
}

/**
 * Uploads the label with its big folder (staged, then moved into update-site/) and waits for its
 * crawl; returns the URL of the big folder's index on the download host.
 */
export async function prepareFolderIndex(plan: FolderIndexPlan, sftp: ssh2.SFTPWrapper): Promise<string> {
  const local = fs.mkdtempSync(path.join(os.tmpdir(), 'pier-bench-index-'));
  try {
    buildSite(local, exampleSpec('jar', 'org.bench.index'));
    const staged = `/workflows/staged-${LABEL}`;
    await mkdirs(sftp, [staged, `${staged}/plugins`, `${staged}/features`, `${staged}/extra`]);
    for (const f of ['content.jar', 'artifacts.jar', 'p2.index', ...fs.readdirSync(path.join(local, 'plugins')).map((n) => `plugins/${n}`), ...fs.readdirSync(path.join(local, 'features')).map((n) => `features/${n}`)]) {
      if (fs.existsSync(path.join(local, f))) await putFile(sftp, `${staged}/${f}`, fs.readFileSync(path.join(local, f)));
    }
    let next = 0;
    const empty = Buffer.alloc(0);
    await Promise.all(
      Array.from({ length: WINDOW }, async () => {
        while (next < ENTRIES) {
          const i = next++;
          await putFile(sftp, `${staged}/extra/file-${String(i).padStart(6, '0')}.txt`, empty);
        }
      }),
    );
    const since = Date.now();
    await call((cb) => sftp.rename(staged, `/update-site/${LABEL}`, cb));
    // Served as users get it once crawled (released): wait for that.
    for (const until = Date.now() + 180_000; ; ) {
      const res = await fetch(`${plan.webUrl}/api/products/${plan.productId}/crawl`, { headers: { authorization: `Bearer ${plan.token}` } });
      const body = (await res.json()) as { labels: { label: string; status: string; stale: boolean; finishedAt: string | null }[] };
      const c = body.labels.find((l) => l.label === LABEL);
      if (c && c.status === 'finished' && !c.stale && Date.parse(c.finishedAt ?? '') >= since) break;
      if (Date.now() > until) throw new Error(`the crawl of update-site/${LABEL}/ did not finish within 180 s`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const info = (await (await fetch(`${plan.webUrl}/api/publishing`)).json()) as { downloadUrl: string };
    return `${info.downloadUrl}/${plan.productId}/${LABEL}/extra/`;
  } finally {
    fs.rmSync(local, { recursive: true, force: true });
  }
}

/** CLIENTS clients, each paging from the first page to the last by the index's "next" links, again and again. */
export async function folderIndexAttack(first: string, live: () => boolean): Promise<void> {
  const r = folderIndexReport;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (live()) {
        let url: string | null = first;
        while (url && live()) {
          const started = performance.now();
          const res: Response = await fetch(url);
          const html: string = await res.text();
          if (!res.ok) {
            r.failed ??= `${res.status} ${html.slice(0, 120)}`;
            return;
          }
          r.pages++;
          r.slowestMs = Math.max(r.slowestMs, performance.now() - started);
          const link = /<a rel="next" href="([^"]+)">/.exec(html)?.[1];
          url = link ? new URL(link.replace(/&amp;/g, '&'), url).href : null;
          if (url === null) r.passes++;
        }
      }
    }),
  );
}
